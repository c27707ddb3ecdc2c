#include "tests/integration/prometheus_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <csignal>
#include <fstream>
#include <random>
#include <thread>

namespace tessera::testing {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

std::string duration_text(milliseconds d) { return std::to_string(d.count()) + "ms"; }

json scrape_config(const ScrapeJob& job, milliseconds interval) {
  json config = {{"job_name", job.name}, {"metrics_path", job.metrics_path}};
  if (!job.targets.empty()) config["static_configs"] = json::array({{{"targets", job.targets}}});
  if (!job.file_sd_files.empty()) {
    json files = json::array();
    for (const auto& f : job.file_sd_files) files.push_back(std::filesystem::absolute(f).string());
    config["file_sd_configs"] = json::array({{{"files", files}, {"refresh_interval", duration_text(interval)}}});
  }
  return config;
}

// prometheus.yml as JSON, which YAML parsers read too (and which needs no YAML quoting rules).
std::string config_text(const PrometheusOptions& options, int port) {
  const std::string interval = duration_text(options.interval);
  json config = {
      {"global", {{"scrape_interval", interval}, {"scrape_timeout", interval}, {"evaluation_interval", interval}}}};
  json jobs = json::array();
  if (options.scrape_self) {
    ScrapeJob self;
    self.name = "prometheus";
    self.targets = {"127.0.0.1:" + std::to_string(port)};
    jobs.push_back(scrape_config(self, options.interval));
  }
  for (const ScrapeJob& job : options.jobs) jobs.push_back(scrape_config(job, options.interval));
  config["scrape_configs"] = jobs;
  if (!options.rule_files.empty()) {
    json rules = json::array();
    for (const auto& f : options.rule_files) rules.push_back(std::filesystem::absolute(f).string());
    config["rule_files"] = rules;
  }
  return config.dump(2) + "\n";
}

}  // namespace

int free_loopback_port() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

std::string url_encode(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += ch;
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

bool write_file_sd(const std::filesystem::path& path, const std::vector<std::string>& targets,
                   const std::map<std::string, std::string>& labels) {
  const json groups = json::array({{{"targets", targets}, {"labels", labels}}});
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << groups.dump(2) << "\n";
    if (!out.flush()) return false;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);  // atomic: Prometheus never reads half a file
  return !ec;
}

PrometheusServer::PrometheusServer(const PrometheusOptions& options) {
  dir_ = std::filesystem::temp_directory_path() /
         ("tessera-prometheus-" + std::to_string(getpid()) + "-" + std::to_string(std::random_device{}()));
  std::error_code ec;
  std::filesystem::create_directories(dir_ / "data", ec);
  if (ec) {
    error_ = "cannot create " + dir_.string() + ": " + ec.message();
    return;
  }
  if (!std::filesystem::exists(kPrometheusPath)) {
    error_ = std::string(kPrometheusPath) + " is missing (Debian package prometheus, see tools/setup.sh)";
    return;
  }
  // The port is free when picked but may be taken before Prometheus binds it: try a few.
  for (int attempt = 0; attempt < 3 && !ok_; ++attempt) {
    const int port = free_loopback_port();
    if (port == 0) {
      error_ = "no free loopback port";
      return;
    }
    ok_ = start_on(port, options);
    if (!ok_ && !exit_status_) break;  // still running but not ready: another port will not help
  }
  if (!ok_) error_ += "; its log:\n" + log();
}

bool PrometheusServer::start_on(int port, const PrometheusOptions& options) {
  stop();
  exit_status_.reset();
  port_ = port;
  std::ofstream(dir_ / "prometheus.yml", std::ios::trunc) << config_text(options, port);
  child_ = std::make_unique<ChildProcess>(
      std::vector<std::string>{kPrometheusPath, "--config.file=" + (dir_ / "prometheus.yml").string(),
                               "--storage.tsdb.path=" + (dir_ / "data").string(), "--web.listen-address=" + address(),
                               "--log.level=info"},
      dir_ / "prometheus.log");
  if (!child_->started()) {
    error_ = std::string("cannot start ") + kPrometheusPath;
    return false;
  }
  const auto deadline = Clock::now() + options.ready_timeout;
  while (Clock::now() < deadline) {
    if (const auto status = child_->wait(milliseconds(0))) {
      exit_status_ = status;
      error_ = "prometheus exited with status " + std::to_string(*status) + " before it was ready";
      return false;
    }
    HttpClient probe(port_, std::chrono::seconds(2));
    if (probe.get("/-/ready").status == 200) {
      client_ = std::make_unique<HttpClient>(port_, std::chrono::seconds(10));
      error_.clear();
      return true;
    }
    std::this_thread::sleep_for(milliseconds(100));
  }
  error_ = "prometheus was not ready within " + duration_text(options.ready_timeout);
  return false;
}

PrometheusServer::~PrometheusServer() {
  stop();
  child_.reset();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::optional<int> PrometheusServer::stop(milliseconds timeout) {
  if (!child_ || !child_->started() || exit_status_) return exit_status_;
  client_.reset();
  child_->send_signal(SIGTERM);
  exit_status_ = child_->wait(timeout);
  if (!exit_status_) {
    child_->send_signal(SIGKILL);
    exit_status_ = child_->wait(milliseconds(5000));
  }
  return exit_status_;
}

std::string PrometheusServer::log() const { return read_text_file(dir_ / "prometheus.log"); }

ApiResult PrometheusServer::api_get(const std::string& target) {
  ApiResult result;
  if (!client_) {
    result.error = "prometheus is not running" + (error_.empty() ? "" : ": " + error_);
    return result;
  }
  HttpReply reply = client_->get(target);
  if (reply.status == 0) reply = client_->get(target);  // a keep-alive connection the server closed
  if (reply.status == 0) {
    result.error = "GET " + target + ": " + reply.error;
    return result;
  }
  const json body = json::parse(reply.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_object() && body.value("status", "") == "success" && body.contains("data")) {
    result.ok = true;
    result.data = body["data"];
  } else {
    result.error = "GET " + target + ": HTTP " + std::to_string(reply.status) + ": " + reply.body;
  }
  return result;
}

ApiResult PrometheusServer::query(const std::string& promql) {
  return api_get("/api/v1/query?query=" + url_encode(promql));
}

ApiResult PrometheusServer::wait_for(const std::string& promql,
                                     const std::function<bool(const nlohmann::json&)>& predicate,
                                     milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    ApiResult result = query(promql);
    if (result.ok && predicate(result.data)) return result;
    if (Clock::now() >= deadline) {
      result.error = "'" + promql + "' did not satisfy the condition within " + duration_text(timeout) +
                     "; last answer: " + (result.ok ? result.data.dump() : result.error);
      result.ok = false;
      return result;
    }
    std::this_thread::sleep_for(milliseconds(200));
  }
}

std::optional<double> PrometheusServer::first_value(const nlohmann::json& data) {
  // vector: {"result": [{"metric": {...}, "value": [t, "v"]}, ...]}; scalar: {"result": [t, "v"]}.
  if (!data.is_object() || !data.contains("result")) return std::nullopt;
  const json& result = data["result"];
  const std::string type = data.value("resultType", "");
  const json* value = nullptr;
  if (type == "vector" && !result.empty() && result[0].contains("value")) value = &result[0]["value"];
  if (type == "scalar") value = &result;
  if (value == nullptr || !value->is_array() || value->size() != 2 || !(*value)[1].is_string()) return std::nullopt;
  try {
    return std::stod((*value)[1].get<std::string>());  // also "NaN", "+Inf", "-Inf"
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace tessera::testing
