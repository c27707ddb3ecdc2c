// `tessera bench` against the real daemon: closed and open loop, unary and streaming, a folder
// with a corrupt image, the per-window CSV. Bounds are loose: a shared 2-core machine is noisy.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <vector>

#include "tests/integration/cli_test_util.h"
#include "tests/integration/daemon_test.h"

namespace tessera::testing {
namespace {

using nlohmann::json;

class CliBenchTest : public DaemonTest {
 protected:
  // Sampling power every 100 ms, so even a short run sees energy samples.
  std::vector<std::string> extra_args() const override { return {"--telemetry-interval-ms", "100"}; }

  void SetUp() override {
    DaemonTest::SetUp();
    images_ = load_fmnist_images();
    ASSERT_GE(images_.size(), 4u) << "no images in " << TESSERA_FMNIST_DIR;
  }

  // Runs bench with --json; the parsed report (null when it did not print one).
  json bench(std::vector<std::string> args, int expected_exit = 0) {
    args.insert(args.begin(), {"bench", "--server", daemon_->grpc_address(), "--json"});
    const ProcessOutput out = run_tessera(args);
    EXPECT_EQ(out.exit_status, expected_exit) << out.err << out.out;
    try {
      return json::parse(out.out);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "no JSON report: " << e.what() << "\n" << out.out << "\n" << out.err;
      return nullptr;
    }
  }

  static void expect_ordered_percentiles(const json& l) {
    EXPECT_GT(l["p50"].get<double>(), 0);
    EXPECT_LE(l["p50"].get<double>(), l["p90"].get<double>());
    EXPECT_LE(l["p90"].get<double>(), l["p95"].get<double>());
    EXPECT_LE(l["p95"].get<double>(), l["p99"].get<double>());
    EXPECT_LE(l["p99"].get<double>(), l["max"].get<double>());
  }

  std::vector<FmnistImage> images_;
};

TEST_F(CliBenchTest, ClosedLoopReportsLatencyBreakdownOverheadAndPower) {
  const json r = bench({"--images", TESSERA_FMNIST_DIR, "--requests", "40", "--concurrency", "4"});
  ASSERT_TRUE(r.is_object());
  EXPECT_EQ(r["config"]["loop"], "closed");
  EXPECT_EQ(r["config"]["model"], "fashion-mnist");
  EXPECT_EQ(r["requests"]["sent"], 40);
  EXPECT_EQ(r["requests"]["ok"], 40);
  EXPECT_EQ(r["requests"]["failed"], 0);
  EXPECT_TRUE(r["errors"].empty()) << r["errors"];
  EXPECT_GT(r["throughput_ips"].get<double>(), 0);
  EXPECT_EQ(r["latency_ms"]["count"], 40);
  expect_ordered_percentiles(r["latency_ms"]);

  const json& s = r["server"];
  for (const char* stage : {"queue_us", "decode_us", "fabric_us", "host_us", "inference_us", "total_us"}) {
    ASSERT_TRUE(s[stage].is_object()) << stage;
    EXPECT_LE(s[stage]["p50"].get<double>(), s[stage]["p99"].get<double>()) << stage;
  }
  EXPECT_GT(s["inference_us"]["mean"].get<double>(), 0);
  EXPECT_GT(s["total_us"]["p50"].get<double>(), 0);
  EXPECT_GE(s["batch_size_mean"].get<double>(), 1.0);
  EXPECT_LE(s["batch_size_mean"].get<double>(), 8.0);
  EXPECT_GT(s["modeled_energy_uj_mean"].get<double>(), 0) << "int8 on emu has a power model";

  // Client latency includes the server's inference time: the overhead is positive, and less
  // than the whole client latency.
  const json& o = r["overhead_us"];
  EXPECT_GT(o["p50"].get<double>(), 0);
  EXPECT_LE(o["p50"].get<double>(), o["p99"].get<double>());
  EXPECT_LT(o["p50"].get<double>(), r["latency_ms"]["max"].get<double>() * 1000);

  ASSERT_TRUE(r["power"].is_object()) << r.value("power_na_reason", "");
  EXPECT_EQ(r["power"]["source"], "model");
  EXPECT_GT(r["power"]["mean_power_w"].get<double>(), 0);
  EXPECT_GT(r["power"]["energy_per_image_j"].get<double>(), 0);
}

TEST_F(CliBenchTest, TextReportNamesEverySection) {
  const ProcessOutput out = run_tessera({"bench", "--server", daemon_->grpc_address(), "--images", TESSERA_FMNIST_DIR,
                                         "--requests", "10", "--concurrency", "2"});
  ASSERT_EQ(out.exit_status, 0) << out.err;
  for (const char* needle : {"throughput:", "latency:", "p99", "errors:     none", "server breakdown", "fabric",
                             "batch size mean", "server overhead", "power:", "mJ/image"}) {
    EXPECT_NE(out.out.find(needle), std::string::npos) << needle << "\n" << out.out;
  }
}

TEST_F(CliBenchTest, OpenLoopAtARateStopsByItself) {
  const auto start = std::chrono::steady_clock::now();
  const json r = bench({"--images", TESSERA_FMNIST_DIR, "--rate", "50", "--duration", "1"});
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(r.is_object());
  EXPECT_EQ(r["config"]["loop"], "open");
  // Poisson arrivals at 50/s for 1 s: about 50; the bounds allow for chance and a slow machine.
  const int sent = r["requests"]["sent"].get<int>();
  EXPECT_GE(sent, 20);
  EXPECT_LE(sent, 90);
  EXPECT_EQ(r["requests"]["ok"].get<int>() + r["requests"]["failed"].get<int>(), sent);
  EXPECT_EQ(r["requests"]["unanswered"], 0);
  EXPECT_LT(wall, 20.0) << "bench must end by itself shortly after --duration";
}

TEST_F(CliBenchTest, FixedSpacingSendsTheRequestedCount) {
  const json r = bench({"--images", TESSERA_FMNIST_DIR, "--rate", "100", "--arrivals", "fixed", "--requests", "25"});
  ASSERT_TRUE(r.is_object());
  EXPECT_EQ(r["requests"]["sent"], 25);
  EXPECT_EQ(r["requests"]["ok"], 25);
  // 25 arrivals 10 ms apart take at least 0.24 s.
  EXPECT_GE(r["elapsed_s"].get<double>(), 0.2);
}

// Unary Classify from either client: the completion queue the sender polls (the default) and
// gRPC's callback API; closed loop with several in flight, and open loop.
TEST_F(CliBenchTest, BothUnaryClientsAnswerEveryRequest) {
  for (const char* client : {"queue", "callback"}) {
    const json closed =
        bench({"--images", TESSERA_FMNIST_DIR, "--requests", "30", "--concurrency", "3", "--grpc-client", client});
    ASSERT_TRUE(closed.is_object()) << client;
    EXPECT_EQ(closed["requests"]["ok"], 30) << client;
    EXPECT_EQ(closed["requests"]["unanswered"], 0) << client;
    expect_ordered_percentiles(closed["latency_ms"]);
    const json open =
        bench({"--images", TESSERA_FMNIST_DIR, "--rate", "200", "--requests", "20", "--grpc-client", client});
    ASSERT_TRUE(open.is_object()) << client;
    EXPECT_EQ(open["requests"]["ok"], 20) << client;
  }
}

TEST_F(CliBenchTest, StreamModeUsesClassifyStream) {
  const json r = bench({"--images", TESSERA_FMNIST_DIR, "--mode", "stream", "--concurrency", "3", "--requests", "30"});
  ASSERT_TRUE(r.is_object());
  EXPECT_EQ(r["config"]["mode"], "stream");
  EXPECT_EQ(r["requests"]["ok"], 30);
  expect_ordered_percentiles(r["latency_ms"]);
  EXPECT_GT(r["server"]["inference_us"]["mean"].get<double>(), 0);
  EXPECT_GT(r["overhead_us"]["p50"].get<double>(), 0);
}

TEST_F(CliBenchTest, CorruptImagesAreCountedByCodeNotFatal) {
  for (const char* mode : {"unary", "stream"}) {
    ScratchDir dir("bench-corrupt");
    for (int i = 0; i < 3; ++i) {
      std::filesystem::copy_file(images_[static_cast<size_t>(i)].png,
                                 dir.path / images_[static_cast<size_t>(i)].png.filename());
    }
    dir.write("zz_corrupt.png", not_an_image());  // 1 image in 4
    const json r = bench({"--images", dir.path.string(), "--requests", "20", "--concurrency", "2", "--mode", mode});
    ASSERT_TRUE(r.is_object()) << mode;
    EXPECT_EQ(r["requests"]["sent"], 20) << mode;
    EXPECT_EQ(r["errors"]["INVALID_ARGUMENT"], 5) << mode << ": " << r["errors"];
    EXPECT_EQ(r["requests"]["ok"], 15) << mode;
    EXPECT_EQ(r["errors"].size(), 1u) << r["errors"];
  }
}

TEST_F(CliBenchTest, WarmupIsNotMeasuredAndCsvHasOneRowPerWindow) {
  ScratchDir dir("bench-csv");
  const auto csv = dir.path / "windows.csv";
  const json r = bench({"--images", TESSERA_FMNIST_DIR, "--concurrency", "2", "--warmup", "0.3", "--duration", "1.2",
                        "--window", "0.5", "--csv", csv.string()});
  ASSERT_TRUE(r.is_object());
  const uint64_t ok = r["requests"]["ok"].get<uint64_t>();
  EXPECT_GT(ok, 0u);
  std::istringstream in(read_text_file(csv));
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_EQ(line, "time_s,requests,rps,p50_ms,p99_ms,errors");
  std::vector<double> ends;
  uint64_t answered_ok = 0;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string time, requests, rps, p50, p99, errors;
    for (std::string* field : {&time, &requests, &rps, &p50, &p99, &errors}) std::getline(fields, *field, ',');
    ends.push_back(std::stod(time));
    answered_ok += std::stoull(requests) - std::stoull(errors);
  }
  // 1.2 s in 0.5 s windows: whole windows end at 0.5 s steps and the last one at the last answer,
  // which may come after the run's end on a busy machine (answers in flight are waited for): so at
  // least 3 rows, and as many as the last answer's time asks for.
  ASSERT_GE(ends.size(), 3u);
  for (size_t i = 0; i + 1 < ends.size(); ++i) EXPECT_DOUBLE_EQ(ends[i], 0.5 * static_cast<double>(i + 1));
  EXPECT_GE(ends.back(), 0.5 * static_cast<double>(ends.size() - 1));
  EXPECT_LE(ends.back(), 0.5 * static_cast<double>(ends.size()));
  EXPECT_EQ(answered_ok, ok) << "every measured answer is in exactly one window; warmup answers in none";
}

TEST_F(CliBenchTest, MissingImagesFolderOrDeadDaemonFails) {
  const ProcessOutput none =
      run_tessera({"bench", "--server", daemon_->grpc_address(), "--images", "/no/such/dir", "--requests", "1"});
  EXPECT_EQ(none.exit_status, 1);
  EXPECT_NE(none.err.find("/no/such/dir"), std::string::npos) << none.err;
  daemon_->stop();
  const ProcessOutput dead =
      run_tessera({"bench", "--server", daemon_->grpc_address(), "--images", TESSERA_FMNIST_DIR, "--requests", "1"});
  EXPECT_EQ(dead.exit_status, 1);
  EXPECT_NE(dead.err.find("UNAVAILABLE"), std::string::npos) << dead.err;
}

}  // namespace
}  // namespace tessera::testing
