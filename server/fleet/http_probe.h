// One bounded HTTP/1.1 GET to a peer daemon, asynchronous on a given io_context: the fleet view's
// way of asking other daemons for their telemetry and readiness without holding a thread.
#pragma once

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <functional>
#include <string>

#include "server/fleet/peer_list.h"

namespace tessera::fleet {

// What a peer answered: an HTTP status and body, or (status 0) why there was no answer.
struct ProbeReply {
  int status = 0;
  std::string body;
  std::string error;  // "connect: Connection refused", "no answer within 1500 ms"
};

// Largest body read from a peer (a telemetry JSON is a few KiB).
inline constexpr uint64_t kMaxProbeBodyBytes = 1 << 20;

// GETs http://peer/target: resolve, connect, write and read all within `timeout`. `done` runs
// exactly once, on a thread running `ioc`. Call it from such a thread (or post to one).
void async_http_get(boost::asio::io_context& ioc, const PeerAddress& peer, const std::string& target,
                    std::chrono::milliseconds timeout, std::function<void(ProbeReply)> done);

}  // namespace tessera::fleet
