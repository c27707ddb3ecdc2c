// A fleet on one machine: three tesserad instances on loopback ports play three boards; a real
// Prometheus finds them through file-based discovery written by deploy/prometheus's
// boards_to_file_sd.py, evaluates deploy/prometheus's recording and alerting rules, and the
// Grafana dashboard's queries run on what it scraped. Stopping one board makes its `up` 0 and its
// BoardDown alert pend, then fire (the rules' `for:` shortened to 3 s in a test copy).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <unistd.h>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "tests/integration/http_client.h"
#include "tests/integration/prometheus_server.h"
#include "tests/integration/subprocess.h"
#include "tests/integration/tesserad_process.h"

namespace tessera::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using std::chrono::seconds;

const fs::path kDeploy = fs::path(TESSERA_SOURCE_DIR) / "deploy";

// A temp directory removed with the object.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() /
           ("tessera-fleet-" + std::to_string(getpid()) + "-" + std::to_string(std::random_device{}()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// deploy/prometheus/rules/alerts.yml with every `for:` set to `for_text`, so alerts pend and fire
// within a bounded test; the expressions, labels and names are the shipped ones.
fs::path short_for_copy(const fs::path& dir, const std::string& for_text) {
  std::istringstream text(read_text_file(kDeploy / "prometheus/rules/alerts.yml"));
  fs::path out = dir / "alerts.yml";
  std::ofstream copy(out);
  int replaced = 0;
  for (std::string line; std::getline(text, line);) {
    const size_t key = line.find_first_not_of(' ');
    if (key != std::string::npos && line.compare(key, 4, "for:") == 0) {
      line = line.substr(0, key) + "for: " + for_text;
      ++replaced;
    }
    copy << line << "\n";
  }
  EXPECT_GE(replaced, 6) << "every alert has a for:";
  return out;
}

// Number of samples of a vector query result (-1 when it is not a vector).
int sample_count(const json& data) {
  if (!data.is_object() || data.value("resultType", "") != "vector") return -1;
  return static_cast<int>(data["result"].size());
}

// The BoardDown alerts (any state) for `instance`, from GET /api/v1/alerts.
std::vector<std::string> board_down_states(PrometheusServer& prometheus, const std::string& instance) {
  std::vector<std::string> states;
  ApiResult alerts = prometheus.alerts();
  if (!alerts.ok) return states;
  for (const json& a : alerts.data["alerts"]) {
    const json& labels = a["labels"];
    if (labels.value("alertname", "") == "BoardDown" && labels.value("instance", "") == instance) {
      states.push_back(a.value("state", ""));
    }
  }
  return states;
}

// Every PromQL query of the Grafana dashboard, its template variables replaced as Grafana would
// for "All" boards.
std::vector<std::pair<std::string, std::string>> dashboard_queries() {
  const json dash = json::parse(read_text_file(kDeploy / "grafana/dashboards/tessera-fleet.json"));
  std::vector<std::pair<std::string, std::string>> out;
  for (const json& panel : dash["panels"]) {
    for (const json& target : panel.value("targets", json::array())) {
      std::string expr = target.value("expr", "");
      expr = std::regex_replace(expr, std::regex(R"(\$__rate_interval)"), "1m");
      expr = std::regex_replace(expr, std::regex(R"(\$instance)"), ".*");
      out.emplace_back(panel.value("title", ""), expr);
    }
  }
  return out;
}

// Three tesserad instances playing boards, each with its own board profile, like a mixed fleet.
struct Boards {
  const std::array<std::string, 3> names = {"board-a", "board-b", "board-c"};
  const std::array<std::string, 3> profiles = {"zcu102", "zcu104", "aws-f1"};
  std::vector<std::unique_ptr<TesseradProcess>> processes;

  // The HTTP address Prometheus scrapes board i at.
  std::string instance(size_t i) const { return "127.0.0.1:" + std::to_string(processes[i]->http_port()); }
};

void start_boards(Boards& boards) {
  for (size_t i = 0; i < boards.names.size(); ++i) {
    boards.processes.push_back(std::make_unique<TesseradProcess>(std::vector<std::string>{
        "--board", boards.profiles[i], "--telemetry-interval-ms", "200", "--drain-timeout", "2"}));
    ASSERT_TRUE(boards.processes.back()->ok()) << boards.processes.back()->error();
  }
}

// Prometheus finding the boards through file_sd written by the deploy script from a boards list,
// with the shipped recording rules and the alerts' `for:` shortened to 3 s.
void start_prometheus(const Boards& boards, const fs::path& dir, std::unique_ptr<PrometheusServer>& prometheus) {
  std::ofstream list(dir / "boards.txt");
  for (size_t i = 0; i < boards.names.size(); ++i) list << boards.instance(i) << " " << boards.names[i] << "\n";
  list.close();
  const fs::path file_sd = dir / "boards.json";
  const ProcessOutput sd = run_process({"/usr/bin/python3", (kDeploy / "prometheus/boards_to_file_sd.py").string(),
                                        (dir / "boards.txt").string(), file_sd.string()},
                                       milliseconds(30000));
  ASSERT_EQ(sd.exit_status, 0) << sd.out << sd.err;

  PrometheusOptions options;
  ScrapeJob job;
  job.name = "tessera";  // the job name the shipped rules select on
  job.file_sd_files = {file_sd};
  options.jobs = {job};
  options.rule_files = {kDeploy / "prometheus/rules/recording.yml", short_for_copy(dir, "3s")};
  options.interval = milliseconds(1000);
  prometheus = std::make_unique<PrometheusServer>(options);
  ASSERT_TRUE(prometheus->ok()) << prometheus->error();
}

// All three discovered, scraped and labelled with their names.
void expect_boards_discovered(PrometheusServer& prometheus, const Boards& boards) {
  ApiResult up = prometheus.wait_for(
      "fleet:tessera_boards_up:sum", [](const json& d) { return PrometheusServer::first_value(d) == 3.0; },
      milliseconds(25000));
  ASSERT_TRUE(up.ok) << up.error << "\n" << prometheus.log();
  ApiResult named = prometheus.query("count by (board_name) (up{job=\"tessera\"})");
  ASSERT_TRUE(named.ok) << named.error;
  std::set<std::string> seen;
  for (const json& r : named.data["result"]) seen.insert(r["metric"].value("board_name", ""));
  EXPECT_EQ(seen, std::set<std::string>(boards.names.begin(), boards.names.end()));
}

// Traffic on every board (after its first scrape, so the rates see increases).
void send_traffic(const Boards& boards) {
  const std::string image =
      read_text_file(fs::path(TESSERA_SOURCE_DIR) / "models/fashion-mnist/calibration/00000_9.png");
  ASSERT_FALSE(image.empty());
  for (const auto& board : boards.processes) {
    HttpClient http(board->http_port());
    for (int n = 0; n < 20; ++n) {
      const HttpReply reply = http.post("/v1/classify", image, "image/png");
      ASSERT_EQ(reply.status, 200) << reply.body;
    }
  }
}

// A PromQL value that is there, positive and finite.
bool positive_finite(const json& d) {
  const auto v = PrometheusServer::first_value(d);
  return v && *v > 0 && std::isfinite(*v);
}

// Fleet-wide series from the recording rules.
void expect_recorded_series(PrometheusServer& prometheus) {
  ApiResult rate = prometheus.wait_for(
      "count(instance:tessera_images:rate1m > 0)",
      [](const json& d) { return PrometheusServer::first_value(d) == 3.0; }, milliseconds(20000));
  EXPECT_TRUE(rate.ok) << rate.error;
  ApiResult fleet_rate = prometheus.wait_for(
      "fleet:tessera_images:rate1m", [](const json& d) { return PrometheusServer::first_value(d) > 0.0; },
      milliseconds(10000));
  EXPECT_TRUE(fleet_rate.ok) << fleet_rate.error;
  ApiResult p99 = prometheus.wait_for("fleet:tessera_request_seconds:p99_5m", positive_finite, milliseconds(10000));
  EXPECT_TRUE(p99.ok) << p99.error;
  ApiResult joules = prometheus.wait_for("fleet:tessera_joules_per_image:rate5m", positive_finite, milliseconds(10000));
  EXPECT_TRUE(joules.ok) << joules.error;
  // Fleet power is the sum of the boards' (the emulator's power model: every board has some).
  // The rule is evaluated on its own clock and the boards are scraped on theirs (both 1 s apart):
  // between a scrape and the next evaluation the raw sum is newer than the recorded one, so the
  // two agree once an evaluation has seen the latest scrape; retried until then.
  ApiResult power = prometheus.wait_for(
      "fleet:tessera_power_watts:sum - sum(tessera_power_watts{job=\"tessera\"})",
      [](const json& d) {
        const auto v = PrometheusServer::first_value(d);
        return v && std::abs(*v) < 1e-9;
      },
      milliseconds(10000));
  EXPECT_TRUE(power.ok) << power.error << " " << power.data.dump();
  ApiResult each_power = prometheus.query("count(tessera_power_watts{job=\"tessera\"} > 0)");
  EXPECT_EQ(PrometheusServer::first_value(each_power.data), 3.0) << each_power.data.dump();
}

// Every dashboard query is valid PromQL on this Prometheus, and the fleet row's have data.
void expect_dashboard_queries_answer(PrometheusServer& prometheus) {
  for (const auto& [title, expr] : dashboard_queries()) {
    ApiResult r = prometheus.query(expr);
    EXPECT_TRUE(r.ok) << "panel '" << title << "': " << expr << ": " << r.error;
    if (r.ok && (title.rfind("Fleet", 0) == 0 || title == "Boards up" || title == "Boards ready")) {
      EXPECT_GT(sample_count(r.data), 0) << "panel '" << title << "' shows nothing: " << expr;
    }
  }
}

// `tessera fleet --once --json` on the boards' gRPC ports.
ProcessOutput run_fleet_command(const Boards& boards) {
  std::vector<std::string> argv = {TESSERA_CLI_PATH, "fleet", "--once", "--json", "--timeout-ms", "2000"};
  for (const auto& b : boards.processes) argv.push_back("127.0.0.1:" + std::to_string(b->grpc_port()));
  return run_process(argv, milliseconds(30000));
}

// `tessera fleet` sees the same fleet: three boards up with their profiles.
void expect_fleet_command_sees_all(const Boards& boards) {
  const ProcessOutput out = run_fleet_command(boards);
  ASSERT_EQ(out.exit_status, 0) << out.out << out.err;
  const json table = json::parse(out.out);
  EXPECT_EQ(table["up"], 3) << out.out;
  ASSERT_EQ(table["boards"].size(), 3u);
  for (size_t i = 0; i < boards.profiles.size(); ++i) {
    const json& row = table["boards"][i];
    EXPECT_TRUE(row["up"].get<bool>()) << row.dump();
    EXPECT_NE(row["device"].get<std::string>().find(boards.profiles[i]), std::string::npos) << row.dump();
    EXPECT_TRUE(row["images_per_second"].is_number()) << row.dump();
  }
}

// After board-b stopped, `tessera fleet` marks it down and still succeeds.
void expect_fleet_command_sees_one_down(const Boards& boards) {
  const ProcessOutput out = run_fleet_command(boards);
  EXPECT_EQ(out.exit_status, 0) << "boards answered, so the fleet command succeeds: " << out.err;
  const json table = json::parse(out.out);
  EXPECT_EQ(table["up"], 2) << out.out;
  EXPECT_FALSE(table["boards"][1]["up"].get<bool>()) << out.out;
  EXPECT_FALSE(table["boards"][1]["reason"].get<std::string>().empty()) << out.out;
}

// The stopped board's `up` is 0, the fleet counts two, and BoardDown pends then fires for it alone.
void expect_board_down_alert(PrometheusServer& prometheus, const Boards& boards, const std::string& down) {
  ApiResult gone = prometheus.wait_for(
      "up{job=\"tessera\",instance=\"" + down + "\"}",
      [](const json& d) { return PrometheusServer::first_value(d) == 0.0; }, milliseconds(15000));
  ASSERT_TRUE(gone.ok) << gone.error;
  ApiResult two = prometheus.wait_for(
      "fleet:tessera_boards_up:sum", [](const json& d) { return PrometheusServer::first_value(d) == 2.0; },
      milliseconds(10000));
  EXPECT_TRUE(two.ok) << two.error;

  std::set<std::string> states_seen;
  const auto deadline = std::chrono::steady_clock::now() + seconds(20);
  while (std::chrono::steady_clock::now() < deadline && !states_seen.count("firing")) {
    for (const std::string& s : board_down_states(prometheus, down)) states_seen.insert(s);
    std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_TRUE(states_seen.count("pending")) << "BoardDown never seen pending for " << down;
  EXPECT_TRUE(states_seen.count("firing")) << "BoardDown never fired for " << down;
  for (size_t i : {size_t{0}, size_t{2}}) {
    EXPECT_TRUE(board_down_states(prometheus, boards.instance(i)).empty())
        << "BoardDown for a running board " << boards.instance(i);
  }
}

TEST(FleetTest, ThreeBoardsScrapedRecordedAlertedAndOneGoesDown) {
  if (!fs::exists(kPrometheusPath)) GTEST_SKIP() << kPrometheusPath << " is missing (Debian package prometheus)";
  TempDir tmp;
  Boards boards;
  ASSERT_NO_FATAL_FAILURE(start_boards(boards));
  std::unique_ptr<PrometheusServer> prometheus;
  ASSERT_NO_FATAL_FAILURE(start_prometheus(boards, tmp.path, prometheus));
  ASSERT_NO_FATAL_FAILURE(expect_boards_discovered(*prometheus, boards));
  ASSERT_NO_FATAL_FAILURE(send_traffic(boards));
  ASSERT_NO_FATAL_FAILURE(expect_recorded_series(*prometheus));
  expect_dashboard_queries_answer(*prometheus);
  ASSERT_NO_FATAL_FAILURE(expect_fleet_command_sees_all(boards));

  // One board goes away.
  const std::string down = boards.instance(1);
  ASSERT_EQ(boards.processes[1]->stop(SIGTERM, milliseconds(20000)), std::optional<int>(0))
      << boards.processes[1]->log();
  expect_fleet_command_sees_one_down(boards);
  expect_board_down_alert(*prometheus, boards, down);
}

}  // namespace
}  // namespace tessera::testing
