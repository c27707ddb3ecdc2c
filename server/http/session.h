// One HTTP connection (Beast 1.74, the advanced_server shape; plain TCP or TLS from one
// implementation, as in advanced_server_flex): reads requests on its strand, hands each to the
// HttpHandler, and writes the answers in request order as they arrive. An answer that is an
// event stream (server-sent events) takes the connection over (event_stream_session.h).
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>

#include "server/http/connection_count.h"
#include "server/http/session_limits.h"
#include "server/http/types.h"

namespace tessera {

// Starts serving an accepted connection (whose executor is a strand): plain HTTP, or HTTPS
// after a TLS handshake with `tls`. `limits`, `handler` and `tls` must outlive the session; the
// connection keeps `slot` until it closes, and follows its drain (connection_count.h).
void start_http_session(boost::asio::ip::tcp::socket&& socket, const HttpSessionLimits& limits, HttpHandler& handler,
                        ConnectionSlot slot);
void start_https_session(boost::asio::ip::tcp::socket&& socket, boost::asio::ssl::context& tls,
                         const HttpSessionLimits& limits, HttpHandler& handler, ConnectionSlot slot);

}  // namespace tessera
