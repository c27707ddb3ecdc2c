// A real Prometheus server (/usr/bin/prometheus, Debian package `prometheus`) as a child process
// on loopback, so tests read tesserad's metrics the way production does: scraped, then PromQL.
// Every wait is bounded; the server and its temp directory go away with the object.
// Timing: /-/ready answers ~0.2 s after the start, but Prometheus 2.42 applies discovered targets
// on a fixed 5 s tick (not configurable), so the first scrape of any job, and the first after a
// file_sd change, comes ~5-6 s later: wait for values with a timeout of 15 s or more.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/integration/http_client.h"
#include "tests/integration/subprocess.h"

namespace tessera::testing {

inline constexpr const char* kPrometheusPath = "/usr/bin/prometheus";

// One scrape job: static targets ("127.0.0.1:8080") and/or file_sd files (see write_file_sd),
// which may be written after the server started; Prometheus picks up changes within a second.
struct ScrapeJob {
  std::string name;
  std::vector<std::string> targets;
  std::vector<std::filesystem::path> file_sd_files;
  std::string metrics_path = "/metrics";
};

struct PrometheusOptions {
  std::vector<ScrapeJob> jobs;
  bool scrape_self = false;                       // adds the job "prometheus" scraping this server's own /metrics
  std::vector<std::filesystem::path> rule_files;  // recording/alerting rule files (YAML)
  milliseconds interval{1000};                    // scrape and rule evaluation interval
  milliseconds ready_timeout{30000};              // for /-/ready after the start
};

// An /api/v1 answer: its "data" when ok, else what went wrong.
struct ApiResult {  // NOLINT(bugprone-exception-escape): nlohmann::json moves without throwing
  bool ok = false;
  nlohmann::json data;
  std::string error;
};

class PrometheusServer {
 public:
  // Picks a free port, writes prometheus.yml into a temp directory, starts the server and waits
  // (bounded) until /-/ready answers 200. ok() says whether that worked.
  explicit PrometheusServer(const PrometheusOptions& options);
  ~PrometheusServer();  // stop(), then removes the temp directory
  PrometheusServer(const PrometheusServer&) = delete;
  PrometheusServer& operator=(const PrometheusServer&) = delete;

  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  // The temp directory (prometheus.yml, data/, prometheus.log); file_sd files may go here.
  const std::filesystem::path& dir() const { return dir_; }
  // The server's log so far (print it when a test fails).
  std::string log() const;

  // An instant query at the current time (GET /api/v1/query).
  ApiResult query(const std::string& promql);
  // Repeats query(promql) every 200 ms until predicate(data) holds: that answer, or after
  // `timeout` ok = false with the last answer in error.
  ApiResult wait_for(const std::string& promql, const std::function<bool(const nlohmann::json&)>& predicate,
                     milliseconds timeout);
  // data.activeTargets / data.droppedTargets (GET /api/v1/targets).
  ApiResult targets() { return api_get("/api/v1/targets"); }
  // data.alerts (GET /api/v1/alerts).
  ApiResult alerts() { return api_get("/api/v1/alerts"); }
  // Any GET of the HTTP API, e.g. "/api/v1/rules"; `target` is already URL-encoded.
  ApiResult api_get(const std::string& target);

  // The value of the first sample of a vector or scalar query result; nullopt when there is none.
  static std::optional<double> first_value(const nlohmann::json& data);

  // SIGTERM, SIGKILL after `timeout`; the exit status. Idempotent.
  std::optional<int> stop(milliseconds timeout = milliseconds(10000));

 private:
  // One attempt to start on `port`; false (error_ set) when the server is not ready in time.
  bool start_on(int port, const PrometheusOptions& options);

  std::filesystem::path dir_;
  std::unique_ptr<ChildProcess> child_;
  std::unique_ptr<HttpClient> client_;
  std::optional<int> exit_status_;
  bool ok_ = false;
  std::string error_;
  int port_ = 0;
};

// Writes a file_sd target file (one group: `targets` with `labels`) atomically (temp + rename).
bool write_file_sd(const std::filesystem::path& path, const std::vector<std::string>& targets,
                   const std::map<std::string, std::string>& labels = {});

// A TCP port on 127.0.0.1 free at the time of the call (0 when none could be bound).
int free_loopback_port();

// `s` with everything but RFC 3986 unreserved characters percent-encoded.
std::string url_encode(const std::string& s);

}  // namespace tessera::testing
