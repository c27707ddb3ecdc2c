// The metrics registry: exact exposition text (labels, gauge callbacks, cumulative histogram
// buckets, escaping, special floats), concurrency, name validation, and the real promtool
// accepting a realistic exposition and rejecting broken ones.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numbers>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "server/metrics/metrics_registry.h"
#include "tests/integration/subprocess.h"

namespace tessera::metrics {
namespace {

constexpr const char* kPromtool = "/usr/bin/promtool";

// The message of the std::invalid_argument `fn` throws ("" when it throws nothing).
template <typename Fn>
std::string misuse_message(Fn&& fn) {
  try {
    fn();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(MetricsRegistry, CounterWithLabelsExposesSortedChildren) {
  Registry registry;
  CounterFamily& requests = registry.counter("tessera_requests_total", "Requests answered.", {"model", "code"});
  requests.with({{"model", "fmnist"}, {"code", "OK"}}).inc(3);
  requests.with({{"code", "UNAVAILABLE"}, {"model", "fmnist"}}).inc();  // label order is free
  requests.with({{"model", "a"}, {"code", "OK"}}).inc(0.5);
  // The same labels give the same child.
  EXPECT_EQ(&requests.with({{"code", "OK"}, {"model", "fmnist"}}),
            &requests.with({{"model", "fmnist"}, {"code", "OK"}}));
  EXPECT_EQ(registry.expose(),
            "# HELP tessera_requests_total Requests answered.\n"
            "# TYPE tessera_requests_total counter\n"
            "tessera_requests_total{model=\"a\",code=\"OK\"} 0.5\n"
            "tessera_requests_total{model=\"fmnist\",code=\"OK\"} 3\n"
            "tessera_requests_total{model=\"fmnist\",code=\"UNAVAILABLE\"} 1\n");
}

TEST(MetricsRegistry, CounterIgnoresNegativeAndNanIncrements) {
  Registry registry;
  Counter& c = registry.counter("c_total", "C.").with();
  c.inc(2);
  c.inc(-1);
  c.inc(std::nan(""));
  EXPECT_EQ(c.value(), 2);
}

TEST(MetricsRegistry, FamiliesSortedByNameAndUnlabelledOnesExposedFromTheStart) {
  Registry registry;
  registry.gauge("zeta", "Last.");
  registry.counter("alpha_total", "First.");
  registry.gauge("labelled", "Not exposed until a child exists.", {"x"});
  EXPECT_EQ(registry.expose(),
            "# HELP alpha_total First.\n# TYPE alpha_total counter\nalpha_total 0\n"
            "# HELP zeta Last.\n# TYPE zeta gauge\nzeta 0\n");
}

TEST(MetricsRegistry, GaugeSetIncDecAndCallback) {
  Registry registry;
  Gauge& depth = registry.gauge("tessera_queue_depth", "Requests waiting.", {"model"}).with({{"model", "m"}});
  depth.set(5);
  depth.inc(2);
  depth.dec();
  EXPECT_EQ(depth.value(), 6);

  double watts = 1.25;
  Gauge& power = registry.gauge("tessera_power_watts", "Board power.").with();
  power.set_callback([&] { return watts; });
  const std::string first = registry.expose();
  watts = 2.5;  // evaluated at scrape time, not at registration
  EXPECT_EQ(registry.expose(),
            "# HELP tessera_power_watts Board power.\n# TYPE tessera_power_watts gauge\ntessera_power_watts 2.5\n"
            "# HELP tessera_queue_depth Requests waiting.\n# TYPE tessera_queue_depth gauge\n"
            "tessera_queue_depth{model=\"m\"} 6\n");
  EXPECT_NE(first.find("tessera_power_watts 1.25\n"), std::string::npos) << first;

  power.set_callback([]() -> double { throw std::runtime_error("sensor gone"); });
  EXPECT_TRUE(std::isnan(power.value()));
  power.clear_callback();
  power.set(7);
  EXPECT_EQ(power.value(), 7);
}

TEST(MetricsRegistry, HistogramBucketsAreCumulativeWithInfSumAndCount) {
  Registry registry;
  HistogramFamily& latency =
      registry.histogram("tessera_request_duration_seconds", "Request latency.", {"model"}, {0.25, 0.5, 1});
  Histogram& h = latency.with({{"model", "m"}});
  for (double v : {0.25, 0.5, 0.75, 3.0}) h.observe(v);  // a bound is inclusive: 0.25 is in le="0.25"
  h.observe(std::nan(""));                               // ignored
  EXPECT_EQ(registry.expose(),
            "# HELP tessera_request_duration_seconds Request latency.\n"
            "# TYPE tessera_request_duration_seconds histogram\n"
            "tessera_request_duration_seconds_bucket{model=\"m\",le=\"0.25\"} 1\n"
            "tessera_request_duration_seconds_bucket{model=\"m\",le=\"0.5\"} 2\n"
            "tessera_request_duration_seconds_bucket{model=\"m\",le=\"1\"} 3\n"
            "tessera_request_duration_seconds_bucket{model=\"m\",le=\"+Inf\"} 4\n"
            "tessera_request_duration_seconds_sum{model=\"m\"} 4.5\n"
            "tessera_request_duration_seconds_count{model=\"m\"} 4\n");
}

TEST(MetricsRegistry, HistogramWithoutLabelsAndTrailingInfBound) {
  Registry registry;
  Histogram& h =
      registry.histogram("batch_size", "Batch sizes.", {}, {1, 2, std::numeric_limits<double>::infinity()}).with();
  h.observe(2);
  EXPECT_EQ(h.bounds(), (std::vector<double>{1, 2}));
  EXPECT_EQ(registry.expose(),
            "# HELP batch_size Batch sizes.\n# TYPE batch_size histogram\n"
            "batch_size_bucket{le=\"1\"} 0\nbatch_size_bucket{le=\"2\"} 1\nbatch_size_bucket{le=\"+Inf\"} 1\n"
            "batch_size_sum 2\nbatch_size_count 1\n");
}

TEST(MetricsRegistry, EscapesHelpAndLabelValues) {
  Registry registry;
  registry.gauge("g", "Line one\nback\\slash \"quoted\"", {"path"}).with({{"path", "say \"hi\"\nC:\\dir"}}).set(1);
  EXPECT_EQ(registry.expose(),
            "# HELP g Line one\\nback\\\\slash \"quoted\"\n"
            "# TYPE g gauge\n"
            "g{path=\"say \\\"hi\\\"\\nC:\\\\dir\"} 1\n");
}

TEST(MetricsRegistry, InvalidUtf8InLabelValuesIsReplaced) {
  Registry registry;
  registry.gauge("g", "G.", {"name"})
      .with({{"name",
              "ok\xff"
              "\xC3\xA9"}})
      .set(1);  // bad byte, then 'é'
  EXPECT_NE(registry.expose().find("g{name=\"ok\xEF\xBF\xBD\xC3\xA9\"} 1\n"), std::string::npos) << registry.expose();
}

TEST(MetricsRegistry, FormatsSpecialAndIntegralFloats) {
  EXPECT_EQ(format_value(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(format_value(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(format_value(std::nan("")), "NaN");
  EXPECT_EQ(format_value(1e6), "1000000");
  EXPECT_EQ(format_value(-3), "-3");
  EXPECT_EQ(format_value(0), "0");
  EXPECT_EQ(format_value(9007199254740992.0), "9007199254740992");
  EXPECT_EQ(format_value(0.1), "0.1");
  EXPECT_EQ(format_value(0.1 + 0.2), "0.30000000000000004");  // round-trips, no digits lost
  EXPECT_EQ(format_value(1e300), "1e+300");
  EXPECT_EQ(format_value(1.5e-7), "1.5e-07");
  EXPECT_EQ(format_value(0.0005), "0.0005");  // like the Go clients' le labels, not "5e-04"
  EXPECT_EQ(format_value(0.00005), "5e-05");
  EXPECT_EQ(format_value(-1234567.5), "-1234567.5");
  EXPECT_EQ(format_value(1e22), "1e+22");
  EXPECT_EQ(std::stod(format_value(std::numbers::pi)), std::numbers::pi);

  Registry registry;
  GaugeFamily& g = registry.gauge("g", "G.", {"v"});
  g.with({{"v", "inf"}}).set(std::numeric_limits<double>::infinity());
  g.with({{"v", "nan"}}).set(std::nan(""));
  g.with({{"v", "neg"}}).set(-std::numeric_limits<double>::infinity());
  EXPECT_EQ(registry.expose(), "# HELP g G.\n# TYPE g gauge\ng{v=\"inf\"} +Inf\ng{v=\"nan\"} NaN\ng{v=\"neg\"} -Inf\n");
}

TEST(MetricsRegistry, BucketHelpers) {
  EXPECT_EQ(exponential_buckets(0.001, 2, 4), (std::vector<double>{0.001, 0.002, 0.004, 0.008}));
  EXPECT_EQ(linear_buckets(1, 2, 3), (std::vector<double>{1, 3, 5}));
  EXPECT_THROW(exponential_buckets(0, 2, 3), std::invalid_argument);
  EXPECT_THROW(exponential_buckets(1, 1, 3), std::invalid_argument);
  EXPECT_THROW(linear_buckets(0, 1, 0), std::invalid_argument);
  EXPECT_THROW(linear_buckets(0, -1, 3), std::invalid_argument);
}

TEST(MetricsRegistry, ConcurrentUpdatesAreExact) {
  Registry registry;
  CounterFamily& counters = registry.counter("hits_total", "Hits.", {"thread"});
  Counter& shared = registry.counter("shared_total", "Shared.").with();
  Histogram& h = registry.histogram("obs", "Observations.", {}, linear_buckets(0, 10, 10)).with();
  constexpr int kThreads = 8, kIterations = 50000;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Counter& mine = counters.with({{"thread", std::to_string(t % 2)}});  // children made concurrently
      for (int i = 0; i < kIterations; ++i) {
        shared.inc();
        mine.inc();
        h.observe(i % 100);
        if (i % 10000 == 0) (void)registry.expose();  // scrapes race with updates
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(shared.value(), kThreads * kIterations);
  EXPECT_EQ(counters.with({{"thread", "0"}}).value(), kThreads / 2 * kIterations);
  EXPECT_EQ(h.cumulative_counts().back(), static_cast<std::uint64_t>(kThreads * kIterations));
  EXPECT_EQ(h.sum(), kThreads * (kIterations / 100.0) * 4950.0);  // 500 rounds of 0..99
  EXPECT_NE(registry.expose().find("shared_total 400000\n"), std::string::npos);
}

TEST(MetricsRegistry, RejectsInvalidNames) {
  Registry r;
  for (const char* bad : {"", "1abc", "a-b", "a b", "é"}) {
    EXPECT_NE(misuse_message([&] { r.gauge(bad, "help"); }).find("invalid metric name"), std::string::npos) << bad;
  }
  for (const char* bad : {"__reserved", "a:b", "1a", "", "a-b"}) {
    EXPECT_NE(misuse_message([&] { r.gauge("g_ok", "help", {bad}); }).find("invalid label name"), std::string::npos)
        << bad;
  }
  EXPECT_NO_THROW(r.gauge("ns:sub_name", "Colons are allowed in metric names.", {"_x", "a1"}));
  EXPECT_NE(misuse_message([&] { r.gauge("dup_labels", "h", {"a", "a"}); }).find("given twice"), std::string::npos);
  EXPECT_NE(misuse_message([&] { r.gauge("no_help", ""); }).find("help text is required"), std::string::npos);
  EXPECT_NE(misuse_message([&] { r.counter("requests", "h"); }).find("must end in _total"), std::string::npos);
  EXPECT_NE(misuse_message([&] { r.gauge("bytes_total", "h"); }).find("only counters"), std::string::npos);
  EXPECT_NE(misuse_message([&] { r.histogram("h1", "h", {"le"}, {1}); }).find("'le'"), std::string::npos);
  EXPECT_NE(misuse_message([&] { r.histogram("h2", "h", {}, {2, 1}); }).find("strictly increasing"), std::string::npos);
  EXPECT_NE(misuse_message([&] { r.histogram("h3", "h", {}, {}); }).find("at least one"), std::string::npos);
  EXPECT_NE(misuse_message([&] { r.histogram("h4", "h", {}, {1, std::nan("")}); }).find("finite"), std::string::npos);
}

TEST(MetricsRegistry, RejectsDuplicatesCollisionsAndLabelMismatches) {
  Registry r;
  GaugeFamily& g = r.gauge("tessera_queue_depth", "Depth.", {"model"});
  EXPECT_NE(misuse_message([&] { r.gauge("tessera_queue_depth", "Again."); }).find("already registered"),
            std::string::npos);
  EXPECT_EQ(misuse_message([&] { r.counter("tessera_queue_depth_total", "Not a clash."); }), "");
  r.histogram("latency_seconds", "Latency.", {}, {1});
  EXPECT_NE(misuse_message([&] { r.gauge("latency_seconds_count", "Clash."); }).find("latency_seconds"),
            std::string::npos);
  r.gauge("size_sum", "A gauge first.");
  EXPECT_NE(misuse_message([&] { r.histogram("size", "Clash.", {}, {1}); }).find("size_sum"), std::string::npos);

  EXPECT_NE(misuse_message([&] { g.with(); }).find("label 'model' missing"), std::string::npos);
  EXPECT_NE(misuse_message([&] {
              g.with({{"model", "a"}, {"device", "emu"}});
            }).find("unknown label 'device'"),
            std::string::npos);
  EXPECT_NE(misuse_message([&] { g.with({{"model", "a"}, {"model", "b"}}); }).find("given twice"), std::string::npos);
  // A failed with() created nothing.
  EXPECT_EQ(r.expose().find("tessera_queue_depth{"), std::string::npos);
}

// ---- the real promtool ----

// A temporary file removed at scope exit.
class TempFile {
 public:
  explicit TempFile(const std::string& content)
      : path_(std::filesystem::temp_directory_path() / ("tessera-metrics-" + std::to_string(getpid()) + "-" +
                                                        std::to_string(std::random_device{}()) + ".prom")) {
    std::ofstream(path_, std::ios::binary) << content;
  }
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// `promtool check metrics` reading `exposition` on stdin.
testing::ProcessOutput promtool_check(const std::string& exposition) {
  TempFile file(exposition);
  return testing::run_process(
      {"/bin/sh", "-c", std::string("exec ") + kPromtool + " check metrics < \"$1\"", "sh", file.path().string()},
      std::chrono::seconds(30));
}

// Families shaped like what tesserad exposes.
std::string realistic_exposition() {
  Registry r;
  CounterFamily& requests =
      r.counter("tessera_requests_total", "Classification requests answered, by model and code.", {"model", "code"});
  requests.with({{"model", "fashion-mnist"}, {"code", "OK"}}).inc(1234);
  requests.with({{"model", "fashion-mnist"}, {"code", "RESOURCE_EXHAUSTED"}}).inc(3);
  requests.with({{"model", "zoo/lenet \"v2\""}, {"code", "OK"}}).inc(7);
  r.counter("tessera_energy_joules_total", "Energy used by the board.").with().inc(8123.375);
  r.gauge("tessera_queue_depth", "Requests waiting in the batcher.", {"model"})
      .with({{"model", "fashion-mnist"}})
      .set(2);
  r.gauge("tessera_power_watts", "Board power draw.").with().set_callback([] { return 9.75; });
  r.gauge("tessera_temperature_celsius", "Die temperature; NaN when unsupported.").with().set(std::nan(""));
  r.gauge("tessera_build_info", "Build and device; always 1.", {"version", "device"})
      .with({{"version", "0.1.0"}, {"device", "emu"}})
      .set(1);
  HistogramFamily& latency = r.histogram("tessera_request_duration_seconds", "Request latency by stage.",
                                         {"model", "stage"}, exponential_buckets(0.0005, 2, 14));
  for (const char* stage : {"queue", "fabric", "host", "total"}) {
    Histogram& h = latency.with({{"model", "fashion-mnist"}, {"stage", stage}});
    for (int i = 0; i < 100; ++i) h.observe(0.0001 * i * i);
  }
  Histogram& batch = r.histogram("tessera_batch_size", "Images per fabric batch.", {"model"}, linear_buckets(1, 1, 8))
                         .with({{"model", "fashion-mnist"}});
  for (int i = 0; i < 50; ++i) batch.observe(i % 9 + 1);
  return r.expose();
}

TEST(MetricsPromtool, AcceptsRealisticExposition) {
  if (!std::filesystem::exists(kPromtool)) GTEST_SKIP() << kPromtool << " missing (Debian package prometheus)";
  const std::string text = realistic_exposition();
  const auto result = promtool_check(text);
  EXPECT_EQ(result.exit_status, 0) << "stdout:\n" << result.out << "stderr:\n" << result.err << "exposition:\n" << text;
  EXPECT_EQ(result.out + result.err, "") << "promtool complained about:\n" << text;
}

TEST(MetricsPromtool, RejectsBrokenExpositions) {
  if (!std::filesystem::exists(kPromtool)) GTEST_SKIP() << kPromtool << " missing (Debian package prometheus)";
  // A parse error: an unescaped quote inside a label value.
  auto result = promtool_check("# HELP g G.\n# TYPE g gauge\ng{a=\"x\"y\"} 1\n");
  EXPECT_NE(result.exit_status, 0);
  EXPECT_NE((result.out + result.err).find("error while linting"), std::string::npos) << result.out << result.err;
  // Lint problems: a counter without _total, a family without help.
  result = promtool_check("# TYPE requests counter\nrequests 1\n");
  EXPECT_NE(result.exit_status, 0);
  EXPECT_NE((result.out + result.err).find("_total"), std::string::npos) << result.out << result.err;
  EXPECT_NE((result.out + result.err).find("no help text"), std::string::npos) << result.out << result.err;
}

}  // namespace
}  // namespace tessera::metrics
