// GET /v1/telemetry/stream: server-sent events, one `data: <json>` event per interval with the
// same JSON as GET /v1/telemetry. Query: interval_ms (default 1000, clamped to 100..60000) and
// max_events (default 0: until the client leaves or the daemon drains).
#pragma once

#include "server/batching/in_flight.h"
#include "server/http/types.h"
#include "server/telemetry/event_stream_hub.h"
#include "server/telemetry/server_stats.h"

namespace tessera {

// Answers with an event stream, or with 400 (bad query) / 503 (draining). Each open stream
// counts in `in_flight` until it ends, and is woken through `hub` when the daemon drains.
void respond_telemetry_stream(const HttpRequest& request, const HttpResponder& respond,
                              const telemetry::ServerStats& stats, InFlightTracker& in_flight, EventStreamHub& hub);

}  // namespace tessera
