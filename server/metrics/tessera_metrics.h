// TesseraMetrics: every series tesserad's /metrics shows, as prometheus-cpp families in one
// registry. The catalogue (names, HELP texts, labels, histogram buckets) lives here and only here:
// deploy/prometheus's rules, the Grafana dashboard and tests/deploy depend on it. What the values
// are is ServerStats' business (server/telemetry/), which updates the series this hands out.
//
// Series come in three scopes, each a small struct of pointers into the registry (valid as long
// as the TesseraMetrics): the daemon's (requests, readiness, uptime), one served model's
// (`model` label) and one device's. A device's series carry a `device` label (its index, "0",
// "1", ...) whether the daemon drives one device or several (--devices, instance groups): a
// series' identity does not change with the device count. Beside them: tessera_build_info and the
// standard process_* series (process_collector.h).
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/labels.h>
#include <prometheus/registry.h>

#include <string>
#include <vector>

#include "server/metrics/process_collector.h"

namespace tessera::metrics {

// The daemon's own series, set at each scrape.
struct DaemonSeries {
  prometheus::Gauge* ready = nullptr;                       // tessera_ready
  prometheus::Gauge* uptime = nullptr;                      // tessera_uptime_seconds
  prometheus::Gauge* http_connections_open = nullptr;       // tessera_http_connections_open
  prometheus::Counter* http_connections_refused = nullptr;  // tessera_http_connections_refused_total
};

// One served model's series.
struct ModelSeries {
  prometheus::Counter* images = nullptr;              // tessera_images_total
  prometheus::Counter* modeled_energy = nullptr;      // tessera_modeled_fabric_energy_joules_total
  prometheus::Histogram* batch_size = nullptr;        // tessera_batch_size
  prometheus::Gauge* queue_depth = nullptr;           // tessera_queue_depth
  std::vector<prometheus::Histogram*> stage_latency;  // tessera_request_stage_seconds, per stage
};

// What tessera_device_info says about a device.
struct DeviceIdentity {
  std::string kind, name, board;
};

// One device's series.
struct DeviceSeries {
  prometheus::Counter* errors = nullptr;            // tessera_device_errors_total
  prometheus::Counter* energy = nullptr;            // tessera_energy_joules_total
  prometheus::Gauge* power = nullptr;               // tessera_power_watts
  prometheus::Gauge* temperature = nullptr;         // tessera_temperature_celsius
  prometheus::Gauge* fabric_utilization = nullptr;  // tessera_fabric_utilization_ratio
  prometheus::Counter* images = nullptr;            // tessera_device_images_total
  prometheus::Gauge* serving = nullptr;             // tessera_device_serving
};

class TesseraMetrics {
 public:
  TesseraMetrics();
  TesseraMetrics(const TesseraMetrics&) = delete;
  TesseraMetrics& operator=(const TesseraMetrics&) = delete;

  // The series of model `model`, created at 0 so they exist before its first request;
  // stage_latency holds one histogram per entry of `stages`, in that order.
  ModelSeries add_model(const std::string& model, const std::vector<std::string>& stages);
  // The series of device `index`, labelled device="<index>", and its tessera_device_info series
  // set to 1.
  DeviceSeries add_device(unsigned index, const DeviceIdentity& identity);

  // tessera_requests_total for one model, door (`api`) and outcome (a gRPC status code name),
  // created on first use. A map lookup under the family's lock: cheap next to a run.
  prometheus::Counter& requests(const std::string& model, const std::string& api, const std::string& code);
  // tessera_fleet_peer_bad_answers_total of one --peers daemon ("HOST:PORT"), created on first use.
  prometheus::Counter& fleet_bad_answers(const std::string& peer);
  const DaemonSeries& daemon() const { return daemon_; }

  // The text exposition of everything above and of the process collector (metrics::kContentType).
  std::string expose() const;

 private:
  prometheus::Registry registry_;  // first: the families below live in it
  prometheus::Family<prometheus::Counter>& requests_family_;
  prometheus::Family<prometheus::Counter>& images_family_;
  prometheus::Family<prometheus::Histogram>& stage_latency_family_;
  prometheus::Family<prometheus::Histogram>& batch_size_family_;
  prometheus::Family<prometheus::Counter>& modeled_energy_family_;
  prometheus::Family<prometheus::Gauge>& queue_depth_family_;
  prometheus::Family<prometheus::Gauge>& device_info_family_;
  prometheus::Family<prometheus::Counter>& device_errors_family_;
  prometheus::Family<prometheus::Counter>& energy_family_;
  prometheus::Family<prometheus::Gauge>& power_family_;
  prometheus::Family<prometheus::Gauge>& temperature_family_;
  prometheus::Family<prometheus::Gauge>& fabric_utilization_family_;
  prometheus::Family<prometheus::Counter>& device_images_family_;
  prometheus::Family<prometheus::Gauge>& device_serving_family_;
  prometheus::Family<prometheus::Counter>& fleet_bad_answers_family_;
  DaemonSeries daemon_;
  ProcessCollector process_;
};

}  // namespace tessera::metrics
