// Telemetry, metrics, batching and drain against the real daemon: /metrics passes the real
// promtool and is scraped by a real Prometheus; GetTelemetry/WatchTelemetry over gRPC and
// /v1/telemetry over HTTP agree; concurrent clients form batches; SIGTERM answers every request.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "tessera/v1/telemetry.grpc.pb.h"
#include "tests/integration/daemon_test.h"
#include "tests/integration/fmnist_images.h"
#include "tests/integration/metrics_text.h"
#include "tests/integration/prometheus_server.h"
#include "tests/integration/subprocess.h"

namespace tessera::testing {
namespace {

using nlohmann::json;
constexpr const char* kPromtool = "/usr/bin/promtool";

class TelemetryTest : public DaemonTest {
 protected:
  std::vector<std::string> extra_args() const override { return {"--telemetry-interval-ms", "100"}; }

  void SetUp() override {
    DaemonTest::SetUp();
    images_ = load_fmnist_images();
    ASSERT_FALSE(images_.empty()) << "no images in " << TESSERA_FMNIST_DIR;
    channel_ = grpc::CreateChannel(daemon_->grpc_address(), grpc::InsecureChannelCredentials());
    telemetry_ = v1::Telemetry::NewStub(channel_);
  }

  // Classifies the first n images over gRPC; all must succeed.
  void classify(int n) {
    for (int i = 0; i < n; ++i) {
      GrpcAnswer a = classify_grpc(*stub_, read_binary(images_[i % images_.size()].png));
      ASSERT_TRUE(a.status.ok()) << a.status.error_message();
      EXPECT_GE(a.response.timing().batch_size(), 1u);
      EXPECT_GT(a.response.timing().modeled_energy_uj(), 0.0) << "int8 on emu has a power model";
    }
  }

  v1::TelemetrySnapshot get_telemetry() {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::TelemetrySnapshot snapshot;
    grpc::Status status = telemetry_->GetTelemetry(&context, v1::GetTelemetryRequest(), &snapshot);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return snapshot;
  }

  std::vector<FmnistImage> images_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Telemetry::Stub> telemetry_;
};

TEST_F(TelemetryTest, MetricsPassPromtoolAndCountTheRequests) {
  classify(5);
  HttpClient http(daemon_->http_port());
  // Energy is integrated between power samples (every 100 ms here): wait for the second one.
  HttpReply reply;
  for (int i = 0; i < 100; ++i) {
    reply = http.get("/metrics");
    if (sample_value(reply.body, "tessera_energy_joules_total{device=\"0\"}").value_or(0) > 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(reply.status, 200) << reply.error;
  EXPECT_NE(reply.header("content-type").find("text/plain; version=0.0.4"), std::string::npos);
  const std::string& text = reply.body;
  EXPECT_EQ(sample_value(text, "tessera_images_total{model=\"fashion-mnist\"}"), 5.0) << text;
  EXPECT_EQ(sample_value(text, "tessera_requests_total{api=\"grpc\",code=\"OK\",model=\"fashion-mnist\"}"), 5.0);
  EXPECT_EQ(sample_value(text, "tessera_request_stage_seconds_count{model=\"fashion-mnist\",stage=\"fabric\"}"), 5.0);
  EXPECT_EQ(sample_value(text, "tessera_batch_size_sum{model=\"fashion-mnist\"}"), 5.0);
  EXPECT_EQ(sample_value(text, "tessera_queue_depth{model=\"fashion-mnist\"}"), 0.0);
  EXPECT_EQ(sample_value(text, "tessera_ready"), 1.0);
  EXPECT_GT(sample_value(text, "tessera_power_watts{device=\"0\"}").value_or(0), 0.0) << "the emulator's power model";
  EXPECT_GT(sample_value(text, "tessera_energy_joules_total{device=\"0\"}").value_or(0), 0.0);
  EXPECT_NE(text.find("tessera_device_info{board=\"zcu102\",device=\"0\",kind=\"emu\""), std::string::npos);

  if (!std::filesystem::exists(kPromtool)) GTEST_SKIP() << kPromtool << " missing (Debian package prometheus)";
  const auto file = std::filesystem::temp_directory_path() / ("tessera-metrics-" + std::to_string(getpid()) + ".txt");
  std::ofstream(file) << text;
  ProcessOutput check = run_process({"/bin/sh", "-c", std::string(kPromtool) + " check metrics < " + file.string()},
                                    std::chrono::milliseconds(20000));
  std::filesystem::remove(file);
  EXPECT_EQ(check.exit_status, 0) << check.out << check.err;
}

TEST_F(TelemetryTest, PrometheusScrapesTheDaemon) {
  if (!std::filesystem::exists(kPrometheusPath)) GTEST_SKIP() << kPrometheusPath << " missing";
  classify(3);
  PrometheusOptions options;
  options.jobs.push_back({"tesserad", {"127.0.0.1:" + std::to_string(daemon_->http_port())}, {}, "/metrics"});
  PrometheusServer prometheus(options);
  ASSERT_TRUE(prometheus.ok()) << prometheus.error() << prometheus.log();
  auto positive = [](const json& data) { return PrometheusServer::first_value(data).value_or(0) > 0; };
  ApiResult images = prometheus.wait_for("tessera_images_total{job=\"tesserad\",model=\"fashion-mnist\"}", positive,
                                         std::chrono::milliseconds(30000));
  ASSERT_TRUE(images.ok) << images.error;
  EXPECT_EQ(PrometheusServer::first_value(images.data), 3.0);
  ApiResult p99 =
      prometheus.query("histogram_quantile(0.99, sum by (le) (tessera_request_stage_seconds_bucket{stage=\"total\"}))");
  ASSERT_TRUE(p99.ok) << p99.error;
  EXPECT_GT(PrometheusServer::first_value(p99.data).value_or(0), 0.0) << p99.data.dump();
  ApiResult up = prometheus.query("up{job=\"tesserad\"}");
  ASSERT_TRUE(up.ok) << up.error;
  EXPECT_EQ(PrometheusServer::first_value(up.data), 1.0);
}

TEST_F(TelemetryTest, GrpcAndHttpTelemetryAgree) {
  classify(4);
  const v1::TelemetrySnapshot g = get_telemetry();
  EXPECT_EQ(g.device_kind(), "emu");
  EXPECT_EQ(g.board(), "zcu102");
  ASSERT_TRUE(g.has_power_watts());
  EXPECT_GT(g.power_watts(), 0.0);
  EXPECT_EQ(g.power_source(), "model");
  EXPECT_FALSE(g.has_temperature_c()) << "no temperature source on the emulator here";
  EXPECT_TRUE(g.ready());
  EXPECT_GT(g.images_per_second(), 0.0);
  EXPECT_GT(g.modeled_energy_joules(), 0.0);
  ASSERT_EQ(g.models_size(), 1);
  const v1::ModelTelemetry& m = g.models(0);
  EXPECT_EQ(m.requests_ok(), 4u);
  uint64_t batched = 0;
  for (const v1::BatchSizeCount& b : m.batch_sizes()) batched += uint64_t{b.size()} * b.batches();
  EXPECT_EQ(batched, 4u);
  ASSERT_EQ(m.latency_size(), 5);
  EXPECT_EQ(m.latency(4).stage(), "total");
  EXPECT_EQ(m.latency(4).count(), 4u);
  EXPECT_GT(m.latency(4).p50_us(), 0.0);
  EXPECT_LE(m.latency(4).p50_us(), m.latency(4).p99_us());

  HttpClient http(daemon_->http_port());
  HttpReply reply = http.get("/v1/telemetry");
  ASSERT_EQ(reply.status, 200) << reply.error;
  const json h = json::parse(reply.body);
  EXPECT_EQ(h["device_kind"], "emu");
  EXPECT_EQ(h["power_source"], "model");
  EXPECT_TRUE(h["temperature_c"].is_null());
  EXPECT_EQ(h["models"][0]["requests_ok"], 4);
  EXPECT_EQ(h["models"][0]["latency"][4]["count"], 4);
  EXPECT_GE(h["energy_joules"].get<double>(), g.energy_joules()) << "energy only grows";
}

TEST_F(TelemetryTest, WatchTelemetryStreamsSnapshotsThenEnds) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  v1::WatchTelemetryRequest request;
  request.set_interval_ms(100);
  request.set_max_snapshots(4);
  // Before the call: the daemon paces from the call's start, which a slow (instrumented) client
  // may only get past after the first snapshot's timer is already running.
  const auto start = std::chrono::steady_clock::now();
  auto reader = telemetry_->WatchTelemetry(&context, request);
  std::vector<v1::TelemetrySnapshot> got;
  v1::TelemetrySnapshot s;
  while (reader->Read(&s)) got.push_back(s);
  const grpc::Status status = reader->Finish();
  EXPECT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(got.size(), 4u);
  for (size_t i = 1; i < got.size(); ++i) EXPECT_GE(got[i].time_unix_ms(), got[i - 1].time_unix_ms() + 90);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(300));
}

TEST_F(TelemetryTest, CancelledWatchEndsPromptly) {
  grpc::ClientContext context;
  v1::WatchTelemetryRequest request;
  request.set_interval_ms(60000);  // the second snapshot would come in a minute
  auto reader = telemetry_->WatchTelemetry(&context, request);
  v1::TelemetrySnapshot s;
  ASSERT_TRUE(reader->Read(&s));
  const auto start = std::chrono::steady_clock::now();
  context.TryCancel();
  EXPECT_FALSE(reader->Read(&s));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  // The daemon is still fine and stops cleanly with no stream open.
  EXPECT_TRUE(get_telemetry().ready());
  EXPECT_EQ(daemon_->stop(SIGTERM), 0);
}

// SIGTERM does not wait for a watch stream's next tick (a minute away): the stream ends with OK
// and the daemon exits well inside its drain timeout.
TEST_F(TelemetryTest, SigtermEndsAnOpenWatchAtOnce) {
  grpc::ClientContext context;
  v1::WatchTelemetryRequest request;
  request.set_interval_ms(60000);
  auto reader = telemetry_->WatchTelemetry(&context, request);
  v1::TelemetrySnapshot s;
  ASSERT_TRUE(reader->Read(&s));
  const auto start = std::chrono::steady_clock::now();
  std::thread stopper([this] { EXPECT_EQ(daemon_->stop(SIGTERM), 0); });
  EXPECT_FALSE(reader->Read(&s));
  const grpc::Status status = reader->Finish();
  stopper.join();
  EXPECT_TRUE(status.ok()) << status.error_code() << " " << status.error_message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(8)) << "the drain timeout is 10 s";
}

// 32 concurrent clients: the batcher forms batches of more than one image.
class BatchingTest : public TelemetryTest {
 protected:
  std::vector<std::string> extra_args() const override { return {"--max-batch", "16", "--max-queue-delay-us", "5000"}; }
};

TEST_F(BatchingTest, ConcurrentClientsFormBatches) {
  constexpr int kClients = 32, kEach = 6;
  std::vector<std::string> bytes;
  bytes.reserve(kClients);
  for (int i = 0; i < kClients; ++i) bytes.push_back(read_binary(images_[i % images_.size()].png));
  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  clients.reserve(kClients);
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      auto stub = v1::Classifier::NewStub(channel_);
      for (int i = 0; i < kEach; ++i) {
        if (classify_grpc(*stub, bytes[c]).status.ok()) ++ok;
      }
    });
  }
  for (auto& t : clients) t.join();
  ASSERT_EQ(ok.load(), kClients * kEach);
  const v1::TelemetrySnapshot s = get_telemetry();
  uint64_t batches = 0, images = 0;
  for (const v1::BatchSizeCount& b : s.models(0).batch_sizes()) {
    batches += b.batches();
    images += uint64_t{b.size()} * b.batches();
    EXPECT_LE(b.size(), 16u);
  }
  ASSERT_EQ(images, uint64_t{kClients * kEach});
  const double mean = static_cast<double>(images) / static_cast<double>(batches);
  std::cout << "mean batch size with " << kClients << " clients: " << mean << " (" << batches << " batches)\n";
  EXPECT_GT(mean, 1.0);
}

// SIGTERM in the middle of a burst: every request sent before it is answered with a result,
// readiness goes false, and the daemon exits 0.
class DrainTest : public TelemetryTest {
 protected:
  std::vector<std::string> extra_args() const override {
    // A long queue delay keeps the burst waiting in the batcher when the signal comes.
    return {"--max-batch", "64", "--max-queue-delay-us", "1500000", "--drain-timeout", "20"};
  }
};

TEST_F(DrainTest, BurstThenSigtermAnswersEveryRequest) {
  constexpr int kRequests = 24;
  std::atomic<int> ok{0}, other{0};
  std::vector<std::thread> clients;
  clients.reserve(kRequests);
  for (int i = 0; i < kRequests; ++i) {
    clients.emplace_back([&, i] {
      GrpcAnswer a = classify_grpc(*stub_, read_binary(images_[i % images_.size()].png));
      (a.status.ok() ? ok : other)++;
    });
  }
  // Wait until the whole burst waits in the queue, then signal.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  uint32_t queued = 0;
  while (std::chrono::steady_clock::now() < until && (queued = get_telemetry().queue_depth()) < kRequests) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const auto signalled = std::chrono::steady_clock::now();
  std::optional<int> exit_status = daemon_->stop(SIGTERM);
  for (auto& t : clients) t.join();
  EXPECT_EQ(queued, uint32_t{kRequests}) << "the burst was not all queued when the signal came";
  EXPECT_EQ(exit_status, 0);
  EXPECT_EQ(ok.load(), kRequests) << other.load() << " requests got no result";
  EXPECT_LT(std::chrono::steady_clock::now() - signalled, std::chrono::seconds(20));
  EXPECT_NE(daemon_->log().find("draining"), std::string::npos);
}

}  // namespace
}  // namespace tessera::testing
