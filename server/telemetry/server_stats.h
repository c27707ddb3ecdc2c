// ServerStats: what the daemon counts about its own work, fed by the batcher (QueueObserver) and
// the power sampler, read by /metrics (Prometheus), GetTelemetry/WatchTelemetry (gRPC) and
// /v1/telemetry (HTTP JSON and server-sent events). One place computes each figure, so the three
// views never disagree.
//
// Recent figures (images/s, latency percentiles, fabric utilisation) come from a sliding window
// of the last `window` of answers; totals (requests, energy, batch-size counts) since start.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "accel/runtime/device_supervisor.h"
#include "server/batching/inference_queue.h"
#include "server/metrics/tessera_metrics.h"
#include "server/telemetry/sampler.h"

namespace tessera {
class ModelRepository;
}

namespace tessera::telemetry {

// The request stages timed for every answer (Timing in classify_result.h).
inline constexpr const char* kStages[] = {"queue", "decode", "fabric", "host", "total"};

// p50/p90/p99/max of one stage over the window, microseconds.
struct StageLatency {
  std::string stage;
  double p50_us = 0, p90_us = 0, p99_us = 0, max_us = 0;
  uint64_t count = 0;  // answers in the window
};

// Per model, over the window (rates, latencies) and since start (counts).
struct ModelStats {
  std::string name;
  size_t queue_depth = 0;
  double images_per_second = 0;
  uint64_t requests_ok = 0, requests_failed = 0;
  std::map<uint32_t, uint64_t> batch_sizes;  // batch size -> batches formed, since start
  std::vector<StageLatency> latency;         // in kStages order
};

// Per device instance: its sensors (or power model) and its share of the work, over the window.
struct DeviceStats {
  unsigned index = 0;
  std::string kind, name, board;
  std::string state = "serving";  // device_state_name(): serving, recovering, out of service
  std::optional<double> power_watts;
  std::string power_source;
  double energy_joules = 0;  // integrated from its power samples since start
  std::optional<double> temperature_c;
  double fabric_utilization = 0;  // share of the window its fabric stage was busy, 0..1
  double images_per_second = 0;   // images its batches answered, over the window
  uint64_t images = 0;            // since start
  uint64_t errors = 0;            // failed runs and loads since start
};

// One view of everything, as GetTelemetry answers it.
struct TelemetrySnapshot {
  std::chrono::system_clock::time_point time;
  std::string device_kind, device_name, board;
  std::optional<double> power_watts;
  std::string power_source;
  double energy_joules = 0;  // integrated board energy since start
  std::optional<double> temperature_c;
  std::string temperature_source;
  std::map<std::string, double> rails_watts;
  double fabric_utilization = 0;     // share of the window the fabric was busy, 0..1
  double images_per_second = 0;      // all models, over the window
  size_t queue_depth = 0;            // all models
  double modeled_energy_joules = 0;  // the plans' fabric energy of everything run (emulator model)
  bool ready = false;
  std::vector<ModelStats> models;
  std::vector<DeviceStats> devices;  // one per device instance, in --devices order
};

// The HTTP server's connections: open now, and refused since start (above --max-connections).
struct ConnectionFigures {
  size_t open = 0;
  uint64_t refused = 0;
};

// One device instance: what /metrics says it is, its board's static power (for the modeled
// energy), and where its power and health are read.
struct DeviceLabels {
  unsigned index = 0;
  std::string kind, name, board;
  double static_watts = 0;
  const TelemetrySampler* sampler = nullptr;  // its power and temperature (null: none)
  const DeviceSupervisor* health = nullptr;   // its state (null: always serving)
};

class ServerStats : public QueueObserver {
 public:
  // `repository`: the served models, read at each snapshot (the series of those served now are
  // made up front, so they exist at 0 before traffic; add_model() makes a later one's).
  // `devices`: the device instances; with several, each one's series carry a `device` label. The
  // repository, `queue` (may be null) and the devices' samplers and supervisors must outlive this.
  ServerStats(const ModelRepository* repository, std::vector<DeviceLabels> devices, const InferenceQueue* queue,
              std::chrono::seconds window = std::chrono::seconds(10));

  // Makes model `name`'s series (at 0) unless it has them; thread-safe.
  void add_model(const std::string& name);
  ~ServerStats() override;

  void on_batch(const ServedModel& model, size_t size) override;
  void on_answer(const InferenceJob& job, const Result<ClassifyResult>& result) override;

  // Whether the daemon admits work (false while starting and draining); shown as tessera_ready.
  void set_ready(bool ready);
  // The queue whose depths are reported (set once, before the first job).
  void set_queue(const InferenceQueue* queue) { queue_ = queue; }
  // Where /metrics reads the HTTP connection figures (set once, before the first scrape; the
  // callable must outlive the scrapes). Unset: the series stay at 0.
  void set_connection_figures(std::function<ConnectionFigures()> read) { connection_figures_ = std::move(read); }
  bool ready() const;
  // A run or load on device instance `index` failed (tessera_device_errors_total).
  void on_device_error(unsigned index);

  // GET /v1/fleet refused an answer of peer `peer` as malformed (tessera_fleet_peer_bad_answers_total).
  void on_fleet_bad_answer(const std::string& peer) const;

  TelemetrySnapshot snapshot() const;
  // The Prometheus text exposition (metrics::kContentType), its computed series (queue depths,
  // rates, power, readiness, ...) brought up to date from one snapshot first.
  std::string expose_metrics() const;
  // The modeled dynamic (MAC + DDR) fabric energy of everything device instance `index` ran so
  // far, joules: what the board profile's power model (ModelSource) turns into watts on the emulator.
  double modeled_dynamic_joules(unsigned index) const;

 private:
  struct Answer {
    std::chrono::steady_clock::time_point at;
    std::string model;
    uint64_t stage_us[5];   // kStages order
    double fabric_busy_us;  // this image's share of its batch's fabric time
    int device;             // the device instance that ran it (-1: the host)
  };
  // What is counted per device instance since start; mu_ guards it.
  struct DeviceTotals {
    double modeled_dynamic_joules = 0;
    uint64_t images = 0, errors = 0;
  };
  // The devices' part of a snapshot (mu_ held): each one's rates over `seconds` of window.
  void device_stats(TelemetrySnapshot& s, double seconds) const;
  // The position in devices_ of device instance `index`; devices_.size() when none has it.
  size_t device_slot(int index) const;

  // Drops answers older than the window; mu_ held.
  void trim(std::chrono::steady_clock::time_point now) const;
  std::vector<StageLatency> latencies(const std::string& model) const;  // mu_ held; "" = all

  // Model `name`'s series, made on first use; series_mu_ guards the map, not the series.
  const metrics::ModelSeries& series_of(const std::string& name) const;

  const ModelRepository* repository_;
  const std::vector<DeviceLabels> devices_;
  const InferenceQueue* queue_;
  std::function<ConnectionFigures()> connection_figures_;
  const std::chrono::steady_clock::duration window_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();

  mutable std::mutex mu_;
  mutable std::deque<Answer> recent_;
  std::map<std::string, std::map<uint32_t, uint64_t>> batch_sizes_;
  std::map<std::string, std::pair<uint64_t, uint64_t>> outcomes_;  // model -> ok, failed
  std::vector<DeviceTotals> device_totals_;                        // by position in devices_
  double modeled_joules_ = 0;
  bool ready_ = false;

  // The Prometheus series. The per-model and device series are made once in the constructor and
  // only read afterwards (no lock); tessera_requests_total's are looked up per answer.
  mutable metrics::TesseraMetrics metrics_;
  mutable std::mutex series_mu_;
  mutable std::map<std::string, metrics::ModelSeries> model_series_;  // by model name
  std::vector<metrics::DeviceSeries> device_series_;                  // by position in devices_
  mutable std::mutex scrape_mu_;                                      // one scrape's update-then-serialise at a time
};

}  // namespace tessera::telemetry
