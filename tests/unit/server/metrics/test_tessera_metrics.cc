// The daemon's metric catalogue: the families /metrics shows (names and types the rules, the
// dashboard and tests/deploy rely on), their labels and buckets, a per-device label, and the real
// promtool accepting the exposition (and rejecting broken ones, so its verdict means something).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "server/metrics/exposition.h"
#include "server/metrics/tessera_metrics.h"
#include "tests/integration/subprocess.h"

namespace tessera::metrics {
namespace {

constexpr const char* kPromtool = "/usr/bin/promtool";
const std::vector<std::string> kStages = {"queue", "decode", "fabric", "host", "total"};

// A catalogue with one model and one device, as a daemon has after start.
struct StartedMetrics {
  TesseraMetrics metrics;
  ModelSeries model = metrics.add_model("fashion-mnist", kStages);
  DeviceSeries device = metrics.add_device({}, {"emu", "emu0", "zcu102"});
};

// Family name -> TYPE, from the exposition's "# TYPE" lines.
std::map<std::string, std::string> family_types(const std::string& exposition) {
  std::map<std::string, std::string> types;
  std::istringstream in(exposition);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, std::regex("# TYPE (\\S+) (\\S+)"))) types[m[1]] = m[2];
  }
  return types;
}

// The lines of `exposition` that start with `prefix`.
std::vector<std::string> lines_starting(const std::string& exposition, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(exposition);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  }
  return out;
}

TEST(TesseraMetrics, ExposesTheCatalogueFromTheStart) {
  StartedMetrics m;
  const std::map<std::string, std::string> expected = {
      {"tessera_batch_size", "histogram"},
      {"tessera_device_errors_total", "counter"},
      {"tessera_device_images_total", "counter"},
      {"tessera_device_info", "gauge"},
      {"tessera_device_serving", "gauge"},
      {"tessera_energy_joules_total", "counter"},
      {"tessera_fabric_utilization_ratio", "gauge"},
      {"tessera_http_connections_open", "gauge"},
      {"tessera_http_connections_refused_total", "counter"},
      {"tessera_images_per_second", "gauge"},
      {"tessera_images_total", "counter"},
      {"tessera_modeled_fabric_energy_joules_total", "counter"},
      {"tessera_power_watts", "gauge"},
      {"tessera_queue_depth", "gauge"},
      {"tessera_ready", "gauge"},
      {"tessera_request_stage_seconds", "histogram"},
      {"tessera_temperature_celsius", "gauge"},
      {"tessera_uptime_seconds", "gauge"},
  };
  const std::string text = m.metrics.expose();
  EXPECT_EQ(family_types(text), expected) << "tessera_requests_total appears with the first answer\n" << text;
  m.metrics.requests("fashion-mnist", "grpc", "OK").Increment();
  EXPECT_EQ(family_types(m.metrics.expose()).at("tessera_requests_total"), "counter");
  m.metrics.fleet_bad_answers("127.0.0.1:8081").Increment();  // with a peer's first bad answer
  const std::string with_peer = m.metrics.expose();
  EXPECT_EQ(family_types(with_peer).at("tessera_fleet_peer_bad_answers_total"), "counter");
  EXPECT_NE(with_peer.find("\ntessera_fleet_peer_bad_answers_total{peer=\"127.0.0.1:8081\"} 1\n"), std::string::npos)
      << with_peer;
  EXPECT_NE(text.find("\ntessera_images_total{model=\"fashion-mnist\"} 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\ntessera_device_info{board=\"zcu102\",kind=\"emu\",name=\"emu0\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("\ntessera_device_errors_total 0\n"), std::string::npos) << "no device label for one device";
}

TEST(TesseraMetrics, HistogramBucketsKeepTheirBounds) {
  StartedMetrics m;
  m.model.stage_latency.at(4)->Observe(0.003);
  m.model.batch_size->Observe(8);
  const std::string text = m.metrics.expose();
  const auto total =
      lines_starting(text, "tessera_request_stage_seconds_bucket{model=\"fashion-mnist\",stage=\"total\"");
  ASSERT_EQ(total.size(), 22u) << "50 us .. ~52 s, x2 each, and +Inf\n" << text;
  EXPECT_NE(total.front().find("le=\"5e-05\"} 0"), std::string::npos) << total.front();
  EXPECT_NE(total.back().find("le=\"+Inf\"} 1"), std::string::npos) << total.back();
  const auto batch = lines_starting(text, "tessera_batch_size_bucket{model=\"fashion-mnist\"");
  ASSERT_EQ(batch.size(), 10u) << "1, 2, 4 .. 256 and +Inf\n" << text;
  EXPECT_NE(batch.at(3).find("le=\"8\"} 1"), std::string::npos) << batch.at(3);
  EXPECT_NE(batch.at(8).find("le=\"256\"} 1"), std::string::npos) << batch.at(8);
}

TEST(TesseraMetrics, ModelSeriesAreOnePerStageAndLabelValuesValidUtf8) {
  TesseraMetrics metrics;
  const ModelSeries series = metrics.add_model("zoo/\xFFlenet", kStages);
  ASSERT_EQ(series.stage_latency.size(), kStages.size());
  series.stage_latency[2]->Observe(0.5);
  const std::string text = metrics.expose();
  EXPECT_NE(text.find("tessera_request_stage_seconds_count{model=\"zoo/\xEF\xBF\xBDlenet\",stage=\"fabric\"} 1\n"),
            std::string::npos)
      << text;
}

TEST(TesseraMetrics, DeviceLabelsGoOnEveryDeviceSeries) {
  // What instance groups will do: several devices, each with its own `device` label.
  TesseraMetrics metrics;
  const DeviceSeries first = metrics.add_device({{"device", "0"}}, {"xrt", "card0", "aws-f1"});
  const DeviceSeries second = metrics.add_device({{"device", "1"}}, {"xrt", "card1", "aws-f1"});
  EXPECT_NE(first.power, second.power);
  first.errors->Increment();
  second.power->Set(20);
  const std::string text = metrics.expose();
  for (const char* line :
       {"tessera_device_errors_total{device=\"0\"} 1\n", "tessera_device_errors_total{device=\"1\"} 0\n",
        "tessera_power_watts{device=\"1\"} 20\n", "tessera_energy_joules_total{device=\"0\"} 0\n",
        "tessera_temperature_celsius{device=\"0\"} 0\n", "tessera_fabric_utilization_ratio{device=\"1\"} 0\n",
        "tessera_device_info{board=\"aws-f1\",device=\"1\",kind=\"xrt\",name=\"card1\"} 1\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "in\n" << text;
  }
}

TEST(TesseraMetrics, HelpTextsNeedNoEscaping) {
  // prometheus-cpp's TextSerializer writes HELP texts as they are (exposition.h).
  StartedMetrics m;
  m.metrics.requests("m", "http", "OK").Increment();
  for (const std::string& help : lines_starting(m.metrics.expose(), "# HELP ")) {
    EXPECT_EQ(help.find('\\'), std::string::npos) << help;
  }
}

// ---- the real promtool ----

// `promtool check metrics` reading `exposition` on stdin (from a temporary file).
testing::ProcessOutput promtool_check(const std::string& exposition) {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() /
      ("tessera-metrics-" + std::to_string(getpid()) + "-" + std::to_string(std::random_device{}()) + ".prom");
  std::ofstream(file, std::ios::binary) << exposition;
  auto result = testing::run_process(
      {"/bin/sh", "-c", std::string("exec ") + kPromtool + " check metrics < \"$1\"", "sh", file.string()},
      std::chrono::seconds(30));
  std::error_code ec;
  std::filesystem::remove(file, ec);
  return result;
}

TEST(TesseraMetricsPromtool, AcceptsTheDaemonsExposition) {
  if (!std::filesystem::exists(kPromtool)) GTEST_SKIP() << kPromtool << " missing (Debian package prometheus)";
  StartedMetrics m;
  m.metrics.requests("fashion-mnist", "grpc", "OK").Increment(1234);
  m.metrics.requests("zoo/lenet \"v2\"", "http", "RESOURCE_EXHAUSTED").Increment(3);
  for (prometheus::Histogram* stage : m.model.stage_latency) {
    for (int i = 0; i < 100; ++i) stage->Observe(0.0001 * i * i);
  }
  m.model.batch_size->Observe(4);
  m.device.power->Set(9.75);
  m.device.temperature->Set(std::nan(""));  // no sensor
  m.device.energy->Increment(8123.375);
  m.metrics.daemon().ready->Set(1);
  const std::string text = m.metrics.expose();
  const auto result = promtool_check(text);
  EXPECT_EQ(result.exit_status, 0) << "stdout:\n" << result.out << "stderr:\n" << result.err << "exposition:\n" << text;
  EXPECT_EQ(result.out + result.err, "") << "promtool complained about:\n" << text;
}

TEST(TesseraMetricsPromtool, RejectsBrokenExpositions) {
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
