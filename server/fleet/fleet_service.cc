#include "server/fleet/fleet_service.h"

#include <boost/asio/post.hpp>

#include <memory>

#include "server/fleet/fleet_rows.h"
#include "server/fleet/http_probe.h"
#include "server/telemetry/server_stats.h"
#include "server/telemetry/telemetry_json.h"

namespace tessera::fleet {

using nlohmann::json;

namespace {

// One /v1/fleet request's answers so far; touched only on the service's thread.
// NOLINTNEXTLINE(bugprone-exception-escape): json's noexcept move calls assert_invariant, unprovable to tidy
struct Round {
  json body;
  std::vector<ProbeReply> telemetry, ready;
  size_t pending = 0;
  std::function<void(json)> done;
};

}  // namespace

FleetService::FleetService(std::vector<PeerAddress> peers, std::chrono::milliseconds timeout,
                           const telemetry::ServerStats& stats)
    : peers_(std::move(peers)), timeout_(timeout), stats_(stats), work_(boost::asio::make_work_guard(ioc_)) {
  thread_ = std::thread([this] { ioc_.run(); });
}

FleetService::~FleetService() { stop(); }

void FleetService::stop() {
  work_.reset();
  ioc_.stop();
  if (thread_.joinable()) thread_.join();
}

void FleetService::set_self_target(std::string target) {
  std::lock_guard lock(mu_);
  self_target_ = std::move(target);
}

json FleetService::checked_peer_row(const std::string& target, const ProbeReply& telemetry,
                                    const ProbeReply& ready) const {
  bool bad_answer = false;
  json row;
  try {
    row = peer_row(target, telemetry, ready, &bad_answer);
  } catch (const json::exception& e) {
    // peer_row reads without throwing; should a read ever throw, the peer's row says so and this
    // thread (whose exception would end the daemon) goes on.
    const ProbeReply refused{0, "", std::string("bad answer: ") + e.what()};
    row = peer_row(target, refused, refused);  // parses nothing
    row["reachable"] = true;
    bad_answer = true;
  }
  if (bad_answer) stats_.on_fleet_bad_answer(target);
  return row;
}

void FleetService::collect(std::function<void(json)> done) {
  std::string self_target;
  {
    std::lock_guard lock(mu_);
    self_target = self_target_;
  }
  auto round = std::make_shared<Round>();
  round->body = {{"timeout_ms", timeout_.count()}, {"rows", json::array()}};
  round->body["rows"].push_back(self_row(self_target, telemetry::to_json(stats_.snapshot()), stats_.ready()));
  if (peers_.empty()) return done(std::move(round->body));

  round->telemetry.resize(peers_.size());
  round->ready.resize(peers_.size());
  round->pending = 2 * peers_.size();
  round->done = std::move(done);
  boost::asio::post(ioc_, [this, round] {
    auto answered = [this, round] {
      if (--round->pending != 0) return;
      for (size_t i = 0; i < peers_.size(); ++i) {
        round->body["rows"].push_back(checked_peer_row(peers_[i].target, round->telemetry[i], round->ready[i]));
      }
      round->done(std::move(round->body));
    };
    for (size_t i = 0; i < peers_.size(); ++i) {
      async_http_get(ioc_, peers_[i], "/v1/telemetry", timeout_, [round, i, answered](ProbeReply reply) {
        round->telemetry[i] = std::move(reply);
        answered();
      });
      async_http_get(ioc_, peers_[i], "/v2/health/ready", timeout_, [round, i, answered](ProbeReply reply) {
        round->ready[i] = std::move(reply);
        answered();
      });
    }
  });
}

}  // namespace tessera::fleet
