// GET /v1/fleet: this daemon and its --peers, each with health and figures. The peers are asked
// (GET /v1/telemetry and /v2/health/ready, all at once, each bounded by the timeout) on the
// service's own io thread, so the HTTP io threads never wait for another daemon.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/fleet/http_probe.h"
#include "server/fleet/peer_list.h"

namespace tessera {
namespace telemetry {
class ServerStats;
}

namespace fleet {

class FleetService {
 public:
  // `stats` (this daemon's own row) must outlive the service.
  FleetService(std::vector<PeerAddress> peers, std::chrono::milliseconds timeout, const telemetry::ServerStats& stats);
  ~FleetService();
  FleetService(const FleetService&) = delete;
  FleetService& operator=(const FleetService&) = delete;

  // How this daemon's own row is named (its HTTP address, known once the server is bound).
  void set_self_target(std::string target);

  // Asks every peer and calls `done` once with {"timeout_ms", "rows": [self, peers in order]}:
  // inline when there are no peers, else on the service's thread within about the timeout.
  void collect(std::function<void(nlohmann::json)> done);

  // Stops the thread; rounds still waiting are dropped unanswered. Idempotent.
  void stop();

 private:
  // peer_row(), counting a malformed answer in the metrics; never throws a JSON error.
  nlohmann::json checked_peer_row(const std::string& target, const ProbeReply& telemetry,
                                  const ProbeReply& ready) const;

  const std::vector<PeerAddress> peers_;
  const std::chrono::milliseconds timeout_;
  const telemetry::ServerStats& stats_;
  std::mutex mu_;
  std::string self_target_;
  boost::asio::io_context ioc_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::thread thread_;
};

}  // namespace fleet
}  // namespace tessera
