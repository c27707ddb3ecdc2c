// GET /v1/fleet against real daemons: one tesserad told about another (which has served an
// image), a dead port and a listener that never answers. Every peer is a row (the dead and the
// silent ones unreachable, with the reason); the peers are asked at once, within the timeout,
// and the daemon's io thread stays free meanwhile.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <future>
#include <iostream>

#include "tests/integration/fmnist_images.h"
#include "tests/integration/http_client.h"
#include "tests/integration/raw_connection.h"
#include "tests/integration/tesserad_process.h"

namespace tessera::testing {
namespace {

using boost::asio::ip::tcp;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kPeerTimeoutMs = 1000;

std::string loopback(int port) { return "127.0.0.1:" + std::to_string(port); }

long ms_since(Clock::time_point start) {
  return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count());
}

class FleetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    images_ = load_fmnist_images();
    ASSERT_FALSE(images_.empty()) << "no images in " << TESSERA_FMNIST_DIR;
    peer_ = std::make_unique<TesseradProcess>();
    ASSERT_TRUE(peer_->ok()) << peer_->error();
    // Accepts connections (the kernel completes them) but never reads nor answers.
    silent_.open(tcp::v4());
    silent_.bind(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
    silent_.listen(16);
    dead_ = dead_port();
    const std::string peers =
        loopback(peer_->http_port()) + "," + loopback(dead_) + "," + loopback(silent_.local_endpoint().port());
    // One HTTP io thread: were /v1/fleet to wait on it, /healthz would wait too.
    daemon_ = std::make_unique<TesseradProcess>(std::vector<std::string>{
        "--peers", peers, "--peer-timeout-ms", std::to_string(kPeerTimeoutMs), "--http-threads", "1"});
    ASSERT_TRUE(daemon_->ok()) << daemon_->error();
  }

  void TearDown() override {
    if (!HasFailure()) return;
    if (daemon_) std::cerr << "---- tesserad (asking) log ----\n" << daemon_->log() << "----\n";
    if (peer_) std::cerr << "---- tesserad (peer) log ----\n" << peer_->log() << "----\n";
  }

  std::vector<FmnistImage> images_;
  std::unique_ptr<TesseradProcess> peer_, daemon_;
  boost::asio::io_context ioc_;
  tcp::acceptor silent_{ioc_};
  int dead_ = 0;
};

TEST_F(FleetTest, ListsItselfAndEveryPeerUnreachableOnesWithTheReason) {
  // The peer serves one image, so it has a rate and a p99 to report.
  HttpClient to_peer(peer_->http_port());
  const HttpReply classified = to_peer.post("/v1/classify", read_binary(images_[0].png), "image/png");
  ASSERT_EQ(classified.status, 200) << classified.error << classified.body;

  HttpClient client(daemon_->http_port());
  const auto start = Clock::now();
  const HttpReply reply = client.get("/v1/fleet");
  const long took_ms = ms_since(start);
  ASSERT_EQ(reply.status, 200) << reply.error << reply.body;
  EXPECT_EQ(reply.header("content-type"), "application/json");
  const json body = json::parse(reply.body);
  EXPECT_EQ(body["timeout_ms"], kPeerTimeoutMs);
  const json& rows = body["rows"];
  ASSERT_EQ(rows.size(), 4u) << body.dump(2);

  const json& self = rows[0];
  EXPECT_EQ(self["self"], true);
  EXPECT_EQ(self["target"], loopback(daemon_->http_port()));
  EXPECT_EQ(self["reachable"], true);
  EXPECT_EQ(self["ready"], true);
  EXPECT_EQ(self["device_kind"], "emu");
  EXPECT_EQ(self["models"], json::array({"fashion-mnist"}));
  EXPECT_TRUE(self["error"].is_null()) << self.dump();

  const json& peer = rows[1];
  EXPECT_EQ(peer["self"], false);
  EXPECT_EQ(peer["target"], loopback(peer_->http_port()));
  EXPECT_EQ(peer["reachable"], true);
  EXPECT_EQ(peer["ready"], true);
  EXPECT_EQ(peer["device_kind"], "emu");
  EXPECT_TRUE(peer["board"].is_string()) << peer.dump();
  EXPECT_EQ(peer["models"], json::array({"fashion-mnist"}));
  ASSERT_TRUE(peer["images_per_second"].is_number()) << peer.dump();
  EXPECT_GT(peer["images_per_second"].get<double>(), 0.0);
  ASSERT_TRUE(peer["p99_us"].is_number()) << peer.dump();
  EXPECT_GT(peer["p99_us"].get<double>(), 0.0);
  ASSERT_TRUE(peer["power_watts"].is_number()) << "the emulator has a power model: " << peer.dump();
  EXPECT_GT(peer["power_watts"].get<double>(), 0.0);
  EXPECT_TRUE(peer["error"].is_null()) << peer.dump();

  const json& dead = rows[2];
  EXPECT_EQ(dead["target"], loopback(dead_));
  EXPECT_EQ(dead["reachable"], false);
  EXPECT_EQ(dead["ready"], false);
  EXPECT_TRUE(dead["device_kind"].is_null());
  ASSERT_TRUE(dead["error"].is_string()) << dead.dump();
  EXPECT_NE(dead["error"].get<std::string>().find("refused"), std::string::npos) << dead.dump();

  const json& silent = rows[3];
  EXPECT_EQ(silent["reachable"], false);
  EXPECT_EQ(silent["error"], "no answer within " + std::to_string(kPeerTimeoutMs) + " ms") << silent.dump();

  // The silent peer's two questions ran at once, each bounded: about one timeout, not two.
  EXPECT_GE(took_ms, kPeerTimeoutMs - 50);
  EXPECT_LT(took_ms, 2 * kPeerTimeoutMs - 100) << "peers asked one after another?";
}

TEST_F(FleetTest, TheIoThreadStaysFreeWhileThePeersAreAsked) {
  auto fleet = std::async(std::launch::async, [this] {
    HttpClient client(daemon_->http_port());
    return client.get("/v1/fleet");
  });
  // The fleet request is now waiting for the silent peer (1 s); the one io thread still answers.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  HttpClient other(daemon_->http_port());
  const auto start = Clock::now();
  const HttpReply health = other.get("/healthz");
  const long took_ms = ms_since(start);
  EXPECT_EQ(health.status, 200) << health.error;
  EXPECT_LT(took_ms, 500) << "/healthz waited for the fleet round";
  EXPECT_EQ(fleet.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout)
      << "the fleet answer came before the silent peer's timeout";
  const HttpReply reply = fleet.get();
  ASSERT_EQ(reply.status, 200) << reply.error;
  EXPECT_EQ(json::parse(reply.body)["rows"].size(), 4u);

  HttpClient client(daemon_->http_port());
  const HttpReply head = client.request(boost::beast::http::verb::head, "/v1/fleet");
  EXPECT_EQ(head.status, 200);
  EXPECT_TRUE(head.body.empty());
  EXPECT_EQ(client.post("/v1/fleet", "", "text/plain").status, 405);
}

TEST(FleetFlags, BadPeersStopTheStartNamingTheEntry) {
  TesseradProcess daemon({"--peers", "127.0.0.1:8080,nowhere"});
  ASSERT_FALSE(daemon.ok());
  EXPECT_NE(daemon.error().find("peer 'nowhere'"), std::string::npos) << daemon.error();
}

TEST(FleetFlags, WithoutPeersTheFleetIsTheDaemonItself) {
  TesseradProcess daemon;
  ASSERT_TRUE(daemon.ok()) << daemon.error();
  HttpClient client(daemon.http_port());
  const HttpReply reply = client.get("/v1/fleet");
  ASSERT_EQ(reply.status, 200) << reply.error;
  const json rows = json::parse(reply.body)["rows"];
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["self"], true);
  EXPECT_EQ(rows[0]["target"], loopback(daemon.http_port()));
}

}  // namespace
}  // namespace tessera::testing
