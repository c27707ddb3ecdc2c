// The daemon's metric catalogue: the families /metrics shows (names and types the rules, the
// dashboard and tests/deploy rely on), their labels and buckets, a `device` label on every device
// series with one device as with several, tessera_build_info and the process_* series, and the
// real promtool accepting the exposition (and rejecting broken ones, so its verdict means something).
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
  DeviceSeries device = metrics.add_device(0, {"emu", "emu0", "zcu102"});
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
      {"process_cpu_seconds_total", "counter"},
      {"process_max_fds", "gauge"},
      {"process_open_fds", "gauge"},
      {"process_resident_memory_bytes", "gauge"},
      {"process_start_time_seconds", "gauge"},
      {"process_virtual_memory_bytes", "gauge"},
      {"tessera_batch_size", "histogram"},
      {"tessera_build_info", "gauge"},
      {"tessera_device_errors_total", "counter"},
      {"tessera_device_images_total", "counter"},
      {"tessera_device_info", "gauge"},
      {"tessera_device_serving", "gauge"},
      {"tessera_energy_joules_total", "counter"},
      {"tessera_fabric_utilization_ratio", "gauge"},
      {"tessera_http_connections_open", "gauge"},
      {"tessera_http_connections_refused_total", "counter"},
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
  EXPECT_NE(text.find("\ntessera_device_info{board=\"zcu102\",device=\"0\",kind=\"emu\",name=\"emu0\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\ntessera_device_errors_total{device=\"0\"} 0\n"), std::string::npos)
      << "one device is device 0";
  EXPECT_EQ(text.find("tessera_images_per_second"), std::string::npos) << "rate(tessera_images_total[...]) instead";
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
  const DeviceSeries first = metrics.add_device(0, {"xrt", "card0", "aws-f1"});
  const DeviceSeries second = metrics.add_device(1, {"xrt", "card1", "aws-f1"});
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

// The device-0 lines of `exposition`'s device series, values left out ("name{labels}").
std::vector<std::string> device_zero_series(const std::string& exposition) {
  std::vector<std::string> out;
  for (const std::string& line : lines_starting(exposition, "tessera_")) {
    if (line.find("device=\"0\"") != std::string::npos) out.push_back(line.substr(0, line.rfind(' ')));
  }
  return out;
}

TEST(TesseraMetrics, ADevicesSeriesAreTheSameWithOneDeviceOrSeveral) {
  // Series identity must not change with the device count: no relabelling when a board gets a
  // second FPGA, so rules and dashboards keep their selectors and a series its history.
  TesseraMetrics alone;
  alone.add_device(0, {"emu", "emu0", "zcu102"});
  TesseraMetrics pair;
  pair.add_device(0, {"emu", "emu0", "zcu102"});
  pair.add_device(1, {"emu", "emu1", "zcu102"});
  const std::vector<std::string> one = device_zero_series(alone.expose());
  EXPECT_EQ(one.size(), 8u) << alone.expose();
  EXPECT_EQ(one, device_zero_series(pair.expose()));
}

TEST(TesseraMetrics, BuildInfoIsOneWithTheBuildsLabels) {
  TesseraMetrics metrics;
  const auto lines = lines_starting(metrics.expose(), "tessera_build_info{");
  ASSERT_EQ(lines.size(), 1u) << metrics.expose();
  const std::regex shape(
      "tessera_build_info\\{arch=\"[^\"]+\",build_type=\"[^\"]+\",compiler=\"(gcc|clang) [^\"]+\","
      "revision=\"([0-9a-f]{40}|unknown)\",version=\"[0-9]+\\.[0-9]+\\.[0-9]+\",xrt=\"(yes|no)\"\\} 1");
  EXPECT_TRUE(std::regex_match(lines[0], shape)) << lines[0];
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
