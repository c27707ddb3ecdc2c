// What an HTTP connection may take and how long it may idle (server.h's options; both kinds of
// session, session.h and event_stream_session.h, obey them).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "server/http/body_budget.h"

namespace tessera {

struct HttpSessionLimits {
  uint64_t body_limit = 16 << 20;          // larger bodies get 413 (a route may ask for less: HttpHandler)
  std::chrono::seconds read_timeout{30};   // per request, idle keep-alive, and the TLS handshake
  std::chrono::seconds write_timeout{30};  // per response, and per event of an event stream
  size_t max_in_flight = 8;                // requests read but not yet answered (the bounded write queue)
  // Shared by every connection of the daemon; null: no budget.
  std::shared_ptr<BodyBudget> body_budget;
};

}  // namespace tessera
