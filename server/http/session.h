// One HTTP connection (Beast 1.74, the advanced_server shape; plain TCP or TLS from one
// implementation, as in advanced_server_flex): reads requests on its strand, hands each to the
// HttpHandler, and writes the answers in request order as they arrive. An answer that is an
// event stream (server-sent events) takes the connection over (event_stream_session.h).
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>

#include <chrono>
#include <cstdint>

#include "server/http/types.h"

namespace tessera {

struct HttpSessionLimits {
  uint64_t body_limit = 16 << 20;          // larger bodies get 413
  std::chrono::seconds read_timeout{30};   // per request, idle keep-alive, and the TLS handshake
  std::chrono::seconds write_timeout{30};  // per response, and per event of an event stream
  size_t max_in_flight = 8;                // requests read but not yet answered (the bounded write queue)
};

// Starts serving an accepted connection (whose executor is a strand): plain HTTP, or HTTPS
// after a TLS handshake with `tls`. `limits`, `handler` and `tls` must outlive the session.
void start_http_session(boost::asio::ip::tcp::socket&& socket, const HttpSessionLimits& limits, HttpHandler& handler);
void start_https_session(boost::asio::ip::tcp::socket&& socket, boost::asio::ssl::context& tls,
                         const HttpSessionLimits& limits, HttpHandler& handler);

}  // namespace tessera
