// Issue 24, item 1: a --peers daemon whose answers hold a field of the wrong JSON type
// ({"ready":"yes"}, a latency "stage" of 5). tesserad used to die on it (nlohmann's value()
// threw type_error.302 on the fleet thread); now the peer's row of GET /v1/fleet names the fault,
// /metrics counts it, and the daemon goes on answering.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <iostream>
#include <string>
#include <thread>

#include "tests/integration/http_client.h"
#include "tests/integration/tesserad_process.h"

namespace tessera::testing {
namespace {

namespace http = boost::beast::http;
using boost::asio::ip::tcp;
using nlohmann::json;

// A peer that is no tesserad: a one-thread HTTP server on 127.0.0.1 answering GET /v1/telemetry
// and /v2/health/ready with fixed bodies (one request per connection), until destroyed.
class FakePeer {
 public:
  FakePeer(std::string telemetry, std::string ready) : telemetry_(std::move(telemetry)), ready_(std::move(ready)) {
    acceptor_.open(tcp::v4());
    acceptor_.bind(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
    acceptor_.listen(16);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakePeer() {
    stopping_ = true;
    boost::system::error_code ec;
    // Wakes accept(): a connection of our own, then the acceptor closes.
    tcp::socket wake(ioc_);
    wake.connect(acceptor_.local_endpoint(), ec);
    thread_.join();
  }
  std::string target() const { return "127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()); }
  int answered() const { return answered_; }

 private:
  void serve() {
    while (!stopping_) {
      boost::system::error_code ec;
      tcp::socket socket(ioc_);
      acceptor_.accept(socket, ec);
      if (ec || stopping_) continue;
      boost::beast::flat_buffer buffer;
      http::request<http::string_body> request;
      http::read(socket, buffer, request, ec);
      if (ec) continue;
      http::response<http::string_body> response(http::status::ok, request.version());
      response.set(http::field::content_type, "application/json");
      response.body() = request.target() == "/v2/health/ready" ? ready_ : telemetry_;
      response.prepare_payload();
      http::write(socket, response, ec);
      ++answered_;
    }
  }

  const std::string telemetry_, ready_;
  boost::asio::io_context ioc_;
  tcp::acceptor acceptor_{ioc_};
  std::atomic<bool> stopping_{false};
  std::atomic<int> answered_{0};
  std::thread thread_;
};

// What a tesserad's /v1/telemetry says, with `changes` merged in.
std::string telemetry_with(const json& changes) {
  json telemetry = {{"device_kind", "emu"},
                    {"board", "zcu102"},
                    {"ready", true},
                    {"images_per_second", 1.5},
                    {"power_watts", 3.0},
                    {"models", {{{"name", "m"}, {"latency", {{{"stage", "total"}, {"p99_us", 900}, {"count", 2}}}}}}}};
  telemetry.merge_patch(changes);
  return telemetry.dump();
}

// The daemon asked about `peer`: its /v1/fleet row of the peer (the second row), the daemon alive.
json fleet_row_of(TesseradProcess& daemon) {
  HttpClient client(daemon.http_port());
  const HttpReply fleet = client.get("/v1/fleet");
  EXPECT_EQ(fleet.status, 200) << fleet.error << fleet.body;
  const json body = json::parse(fleet.body, nullptr, false);
  if (!body.contains("rows") || body["rows"].size() != 2) {
    ADD_FAILURE() << "no peer row in " << fleet.body;
    return json::object();
  }
  return body["rows"][1];
}

void expect_alive(TesseradProcess& daemon) {
  HttpClient client(daemon.http_port());
  const HttpReply health = client.get("/healthz");
  EXPECT_EQ(health.status, 200) << "tesserad did not survive the peer's answer: " << health.error << "\n"
                                << daemon.log();
}

TEST(FleetPeerTypes, ReadyOfTheWrongTypeIsABadAnswerNotACrash) {
  FakePeer peer(telemetry_with({{"ready", "yes"}}), R"({"ready":"yes"})");
  TesseradProcess daemon({"--peers", peer.target(), "--peer-timeout-ms", "2000"});
  ASSERT_TRUE(daemon.ok()) << daemon.error();
  const json row = fleet_row_of(daemon);
  expect_alive(daemon);
  EXPECT_EQ(row.value("target", ""), peer.target());
  EXPECT_EQ(row["reachable"], true);
  EXPECT_EQ(row["ready"], false);
  ASSERT_TRUE(row["error"].is_string()) << row.dump();
  const std::string error = row["error"];
  EXPECT_NE(error.find("telemetry: bad answer: ready must be a boolean"), std::string::npos) << error;
  EXPECT_NE(error.find("readiness: bad answer: ready must be a boolean"), std::string::npos) << error;
  // The fields of the right type are still shown.
  EXPECT_EQ(row["device_kind"], "emu");
  EXPECT_EQ(row["p99_us"], 900);

  HttpClient client(daemon.http_port());
  const HttpReply metrics = client.get("/metrics");
  ASSERT_EQ(metrics.status, 200) << metrics.error;
  EXPECT_NE(metrics.body.find("tessera_fleet_peer_bad_answers_total{peer=\"" + peer.target() + "\"} 1"),
            std::string::npos)
      << metrics.body;
  EXPECT_EQ(daemon.stop(), 0) << daemon.log();
}

TEST(FleetPeerTypes, EveryFieldOfTheWrongTypeIsNamedAndTheRestShown) {
  const json models = {{{"name", 7}, {"latency", {{{"stage", 5}, {"p99_us", "900"}, {"count", 2}}}}}};
  FakePeer peer(telemetry_with({{"models", models}, {"board", {1, 2}}, {"devices", "two"}}), R"({"ready":true})");
  TesseradProcess daemon({"--peers", peer.target(), "--peer-timeout-ms", "2000"});
  ASSERT_TRUE(daemon.ok()) << daemon.error();
  const json row = fleet_row_of(daemon);
  expect_alive(daemon);
  EXPECT_EQ(row["ready"], true);
  EXPECT_EQ(row["board"], nullptr);
  EXPECT_EQ(row["p99_us"], nullptr);
  EXPECT_EQ(row["models"], json::array());
  EXPECT_EQ(row["images_per_second"], 1.5);
  ASSERT_TRUE(row["error"].is_string()) << row.dump();
  const std::string error = row["error"];
  EXPECT_NE(error.find("telemetry: bad answer: board must be a string"), std::string::npos) << error;
  EXPECT_NE(error.find("models[0].name must be a string"), std::string::npos) << error;
  EXPECT_NE(error.find("more)"), std::string::npos) << error;  // stage, p99_us and devices are counted
  EXPECT_EQ(daemon.stop(), 0) << daemon.log();
}

TEST(FleetPeerTypes, AnAnswerThatIsNoObjectIsABadAnswer) {
  FakePeer peer("[1,2,3]", "\"ready\"");
  TesseradProcess daemon({"--peers", peer.target(), "--peer-timeout-ms", "2000"});
  ASSERT_TRUE(daemon.ok()) << daemon.error();
  const json row = fleet_row_of(daemon);
  expect_alive(daemon);
  ASSERT_TRUE(row["error"].is_string()) << row.dump();
  const std::string error = row["error"];
  EXPECT_NE(error.find("telemetry: bad answer: not a JSON object"), std::string::npos) << error;
  EXPECT_NE(error.find("readiness: bad answer: the answer must be an object"), std::string::npos) << error;
  EXPECT_EQ(row["ready"], false);
}

}  // namespace
}  // namespace tessera::testing
