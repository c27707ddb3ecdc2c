// A connection whose answer is an event stream (server-sent events). The HTTP session
// (session.h) hands the connection over once every answer before the stream is written and no
// read is under way; from then on no more requests are read on it. The stream writes the head,
// then an event per tick of the source's interval (or at once when the source wakes it), each
// write bounded by the write timeout; a read stays open meanwhile, so a client that goes away
// ends the stream at once rather than at the next event. When the source is over, the body ends
// and the connection closes.
#pragma once

#include "server/http/connection.h"
#include "server/http/connection_count.h"
#include "server/http/session_limits.h"
#include "server/http/types.h"

namespace tessera {

// `version` is the request's HTTP version: 1.1 gets a chunked body, 1.0 a body that runs until
// the connection closes. `limits` must outlive the stream; the connection's `slot` is kept until
// it closes.
void start_event_stream_session(PlainStream&& stream, HttpEventStream events, unsigned version,
                                const HttpSessionLimits& limits, ConnectionSlot slot);
void start_event_stream_session(TlsStream&& stream, HttpEventStream events, unsigned version,
                                const HttpSessionLimits& limits, ConnectionSlot slot);

}  // namespace tessera
