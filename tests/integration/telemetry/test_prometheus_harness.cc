// The real-Prometheus harness: Prometheus scrapes itself; scrapes a prometheus-cpp registry served from
// a tiny loopback responder and reads the values back through PromQL; follows a file_sd file
// written after it started and fires an alerting rule.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <thread>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "server/metrics/exposition.h"
#include "tests/integration/prometheus_server.h"

namespace tessera::testing {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using net::ip::tcp;
using nlohmann::json;
using std::chrono::seconds;

// Serves metrics::expose(registry) for any GET on 127.0.0.1:port() from its own thread; stops by itself
// after `lifetime` at the latest (or when destroyed).
class ExpositionResponder {
 public:
  ExpositionResponder(const prometheus::Registry& registry, seconds lifetime)
      : registry_(registry), acceptor_(ioc_, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0)) {
    do_accept();
    thread_ = std::thread([this, lifetime] { ioc_.run_for(lifetime); });
  }
  ~ExpositionResponder() {
    ioc_.stop();
    thread_.join();
  }

  int port() const { return acceptor_.local_endpoint().port(); }
  int scrapes() const { return scrapes_.load(); }

 private:
  // One keep-alive connection: read a request, write the exposition, repeat.
  struct Session : std::enable_shared_from_this<Session> {
    Session(tcp::socket socket, ExpositionResponder& responder) : stream(std::move(socket)), owner(responder) {}

    void do_read() {
      request = {};
      stream.expires_after(seconds(10));
      http::async_read(stream, buffer, request,
                       [self = shared_from_this()](beast::error_code ec, size_t) { self->on_read(ec); });
    }
    void on_read(beast::error_code ec) {
      if (ec) return;  // closed or timed out: the session ends
      response = {};
      response.result(http::status::ok);
      response.version(request.version());
      response.set(http::field::content_type, std::string(metrics::kContentType));
      response.body() = metrics::expose(owner.registry_);
      response.keep_alive(request.keep_alive());
      response.prepare_payload();
      ++owner.scrapes_;
      http::async_write(stream, response, [self = shared_from_this()](beast::error_code e, size_t) {
        if (!e && self->response.keep_alive()) self->do_read();
      });
    }

    beast::tcp_stream stream;
    beast::flat_buffer buffer;
    http::request<http::string_body> request;
    http::response<http::string_body> response;
    ExpositionResponder& owner;
  };

  void do_accept() {
    acceptor_.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (ec) return;
      std::make_shared<Session>(std::move(socket), *this)->do_read();
      do_accept();
    });
  }

  const prometheus::Registry& registry_;
  net::io_context ioc_;  // before acceptor_: destroyed after it
  tcp::acceptor acceptor_;
  std::atomic<int> scrapes_{0};
  std::thread thread_;
};

// A predicate for wait_for: the first sample's value equals `expected`.
auto value_is(double expected) {
  return [expected](const json& data) { return PrometheusServer::first_value(data) == expected; };
}

// Checks `condition` every 200 ms until it holds or `timeout` passes.
bool eventually(const std::function<bool()>& condition, seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(200));
  }
  return true;
}

class PrometheusHarness : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kPrometheusPath)) {
      GTEST_SKIP() << kPrometheusPath << " missing (Debian package prometheus, see tools/setup.sh)";
    }
  }
  void TearDown() override {
    if (HasFailure() && prometheus_) std::cerr << "---- prometheus log ----\n" << prometheus_->log() << "----\n";
  }

  void start(const PrometheusOptions& options) {
    prometheus_ = std::make_unique<PrometheusServer>(options);
    ASSERT_TRUE(prometheus_->ok()) << prometheus_->error();
  }

  std::unique_ptr<PrometheusServer> prometheus_;
};

TEST_F(PrometheusHarness, ScrapesItself) {
  PrometheusOptions options;
  options.scrape_self = true;
  ASSERT_NO_FATAL_FAILURE(start(options));
  const ApiResult up = prometheus_->wait_for("up{job=\"prometheus\"}", value_is(1), seconds(15));
  ASSERT_TRUE(up.ok) << up.error;
  EXPECT_EQ(up.data["result"][0]["metric"]["instance"], prometheus_->address());

  const ApiResult targets = prometheus_->targets();
  ASSERT_TRUE(targets.ok) << targets.error;
  ASSERT_EQ(targets.data["activeTargets"].size(), 1u) << targets.data.dump();
  EXPECT_EQ(targets.data["activeTargets"][0]["health"], "up") << targets.data.dump();

  const ApiResult bad = prometheus_->query("up{");  // a PromQL syntax error is reported, not hidden
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(bad.error.find("HTTP 400"), std::string::npos) << bad.error;
  EXPECT_EQ(prometheus_->stop(), 0) << "a SIGTERMed Prometheus exits cleanly";
}

TEST_F(PrometheusHarness, ReadsBackARegistryThroughPromQL) {
  prometheus::Registry registry;
  prometheus::Counter& requests = prometheus::BuildCounter()
                                      .Name("tessera_test_requests_total")
                                      .Help("Requests answered.")
                                      .Register(registry)
                                      .Add({{"model", "fashion-mnist"}, {"code", "OK"}});
  requests.Increment(42);
  prometheus::BuildGauge().Name("tessera_test_power_watts").Help("Board power.").Register(registry).Add({}).Set(9.5);
  prometheus::Histogram& latency = prometheus::BuildHistogram()
                                       .Name("tessera_test_latency_seconds")
                                       .Help("Latency.")
                                       .Register(registry)
                                       .Add({{"model", "fashion-mnist"}}, metrics::exponential_buckets(0.001, 10, 4));
  for (double v : {0.0005, 0.02, 0.02, 3.0}) latency.Observe(v);
  ExpositionResponder responder(registry, seconds(60));

  PrometheusOptions options;
  ScrapeJob job;
  job.name = "tessera";
  job.targets = {"127.0.0.1:" + std::to_string(responder.port())};
  options.jobs = {job};
  ASSERT_NO_FATAL_FAILURE(start(options));

  const std::string selector = "tessera_test_requests_total{job=\"tessera\",model=\"fashion-mnist\",code=\"OK\"}";
  ApiResult r = prometheus_->wait_for(selector, value_is(42), seconds(15));
  ASSERT_TRUE(r.ok) << r.error;
  requests.Increment(8);  // the next scrapes see the new value
  r = prometheus_->wait_for(selector, value_is(50), seconds(10));
  EXPECT_TRUE(r.ok) << r.error;

  r = prometheus_->query("tessera_test_power_watts");
  EXPECT_EQ(PrometheusServer::first_value(r.data), 9.5) << r.error << r.data.dump();
  r = prometheus_->query("tessera_test_latency_seconds_count");
  EXPECT_EQ(PrometheusServer::first_value(r.data), 4) << r.error << r.data.dump();
  r = prometheus_->query("tessera_test_latency_seconds_bucket{le=\"0.1\"}");  // cumulative: 0.0005, 0.02 x2
  EXPECT_EQ(PrometheusServer::first_value(r.data), 3) << r.error << r.data.dump();
  r = prometheus_->query("scalar(histogram_quantile(0.5, tessera_test_latency_seconds_bucket))");
  ASSERT_TRUE(r.ok) << r.error;
  const auto median = PrometheusServer::first_value(r.data);
  ASSERT_TRUE(median.has_value()) << r.data.dump();
  EXPECT_GT(*median, 0.01);
  EXPECT_LE(*median, 0.1);

  const ApiResult targets = prometheus_->targets();
  ASSERT_TRUE(targets.ok) << targets.error;
  EXPECT_EQ(targets.data["activeTargets"][0]["lastError"], "") << targets.data.dump();
  EXPECT_GE(responder.scrapes(), 2);
}

// A temporary directory removed at scope exit.
struct ScopedDir {
  ScopedDir()
      : path(std::filesystem::temp_directory_path() /
             ("tessera-prom-test-" + std::to_string(getpid()) + "-" + std::to_string(std::random_device{}()))) {
    std::filesystem::create_directories(path);
  }
  ~ScopedDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::filesystem::path path;
};

TEST_F(PrometheusHarness, FollowsFileSdAndFiresAlerts) {
  ScopedDir dir;
  std::ofstream(dir.path / "rules.yml") << "groups:\n"
                                           "  - name: harness\n"
                                           "    rules:\n"
                                           "      - alert: FleetBoardUp\n"
                                           "        expr: up{job=\"fleet\"} == 1\n"
                                           "        labels: {severity: info}\n";
  PrometheusOptions options;
  ScrapeJob fleet;
  fleet.name = "fleet";
  fleet.file_sd_files = {dir.path / "fleet.json"};  // written below, once the port is known
  options.jobs = {fleet};
  options.rule_files = {dir.path / "rules.yml"};
  ASSERT_NO_FATAL_FAILURE(start(options));

  ASSERT_TRUE(write_file_sd(dir.path / "fleet.json", {prometheus_->address()}, {{"board", "zcu102"}}));
  const ApiResult up = prometheus_->wait_for("up{job=\"fleet\",board=\"zcu102\"}", value_is(1), seconds(15));
  EXPECT_TRUE(up.ok) << up.error;

  ApiResult alerts;
  const bool firing = eventually(
      [&] {
        alerts = prometheus_->alerts();
        for (const json& alert : alerts.ok ? alerts.data["alerts"] : json::array()) {
          if (alert["labels"]["alertname"] == "FleetBoardUp" && alert["state"] == "firing") return true;
        }
        return false;
      },
      seconds(10));
  EXPECT_TRUE(firing) << (alerts.ok ? alerts.data.dump() : alerts.error);
}

}  // namespace
}  // namespace tessera::testing
