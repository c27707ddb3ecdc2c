#include "server/telemetry/server_stats.h"

#include <algorithm>
#include <cmath>

#include "server/models/model_repository.h"

namespace tessera::telemetry {
namespace {

using Clock = std::chrono::steady_clock;

// Latency buckets in seconds: 50 µs .. ~52 s, x2 each.
std::vector<double> latency_buckets() { return metrics::exponential_buckets(50e-6, 2.0, 21); }

// The value at quantile q of sorted `v` (nearest rank).
double quantile(const std::vector<uint64_t>& v, double q) {
  if (v.empty()) return 0;
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return static_cast<double>(v[std::min(v.size(), std::max<size_t>(rank, 1)) - 1]);
}

}  // namespace

ServerStats::ServerStats(std::vector<const ServedModel*> models, DeviceLabels device, const InferenceQueue* queue,
                         const TelemetrySampler* sampler, std::chrono::seconds window)
    : models_(std::move(models)),
      device_(std::move(device)),
      static_watts_(device_.static_watts),
      queue_(queue),
      sampler_(sampler),
      window_(window) {
  requests_ = &registry_.counter("tessera_requests_total",
                                 "Requests answered, by model, API and outcome (a gRPC status code name).",
                                 {"model", "api", "code"});
  images_ = &registry_.counter("tessera_images_total", "Images classified successfully.", {"model"});
  latency_ = &registry_.histogram("tessera_request_stage_seconds",
                                  "Time of successful requests per stage: queue (waiting for a batch), decode "
                                  "(decode + preprocess), fabric and host (the pipeline stages of the batch), total "
                                  "(arrival to answer).",
                                  {"model", "stage"}, latency_buckets());
  batch_size_ = &registry_.histogram("tessera_batch_size", "Images per batch the batcher formed.", {"model"},
                                     {1, 2, 4, 8, 16, 32, 64, 128, 256});
  modeled_energy_ = &registry_.counter("tessera_modeled_fabric_energy_joules_total",
                                       "Fabric energy of the images run, from the planner's power model.", {"model"});
  for (const ServedModel* served : models_) {
    const std::string& m = served->name();
    images_->with({{"model", m}});
    modeled_energy_->with({{"model", m}});
    for (const char* stage : kStages) latency_->with({{"model", m}, {"stage", stage}});
    batch_size_->with({{"model", m}});
  }

  device_errors_ = &registry_
                        .counter("tessera_device_errors_total",
                                 "Device runs and program loads that failed (timed out, errored, corrupt status); "
                                 "each is followed by a reset and a reload.")
                        .with();
  auto& info = registry_.gauge("tessera_device_info", "The device running the fabric part (always 1).",
                               {"kind", "name", "board"});
  info.with({{"kind", device_.kind}, {"name", device_.name}, {"board", device_.board}}).set(1);
  auto add_callback = [this](metrics::Gauge& g, std::function<double()> fn) {
    g.set_callback(std::move(fn));
    callback_gauges_.push_back(&g);
  };
  auto& depth = registry_.gauge("tessera_queue_depth", "Requests waiting in the model's batcher queue.", {"model"});
  for (const ServedModel* model : models_) {
    add_callback(depth.with({{"model", model->name()}}),
                 [this, model] { return queue_ ? static_cast<double>(queue_->depth(model)) : 0.0; });
  }
  add_callback(
      registry_.gauge("tessera_images_per_second", "Images answered per second over the recent window.").with(),
      [this] { return snapshot().images_per_second; });
  add_callback(
      registry_
          .gauge("tessera_fabric_utilization_ratio", "Share of the recent window the fabric stage was busy (0..1).")
          .with(),
      [this] { return snapshot().fabric_utilization; });
  add_callback(registry_
                   .gauge("tessera_ready",
                          "1 while the daemon is ready, 0 while starting, draining, or while the device is reset or "
                          "out of service.")
                   .with(),
               [this] { return ready() ? 1.0 : 0.0; });
  add_callback(registry_
                   .gauge("tessera_power_watts",
                          "Board power from the first power source that has it "
                          "(NaN when none does).")
                   .with(),
               [this] {
                 auto s = sampler_ ? sampler_->latest() : std::nullopt;
                 return s && s->watts ? *s->watts : std::nan("");
               });
  add_callback(
      registry_.gauge("tessera_temperature_celsius", "Hottest board temperature sensor (NaN when none).").with(),
      [this] {
        auto s = sampler_ ? sampler_->latest() : std::nullopt;
        return s && s->temperature_c ? *s->temperature_c : std::nan("");
      });
  energy_ =
      &registry_.counter("tessera_energy_joules_total", "Board energy integrated from the power samples since start.")
           .with();
  add_callback(registry_.gauge("tessera_uptime_seconds", "Seconds since the daemon started.").with(),
               [this] { return std::chrono::duration<double>(Clock::now() - started_).count(); });
}

ServerStats::~ServerStats() {
  for (metrics::Gauge* g : callback_gauges_) g->clear_callback();
}

void ServerStats::on_batch(const ServedModel& model, size_t size) {
  batch_size_->with({{"model", model.name()}}).observe(static_cast<double>(size));
  std::lock_guard lock(mu_);
  ++batch_sizes_[model.name()][static_cast<uint32_t>(size)];
}

void ServerStats::on_answer(const InferenceJob& job, const Result<ClassifyResult>& result) {
  const std::string model = job.model ? job.model->name() : std::string();
  const char* code = result ? "OK" : status_code_name(result.status().code());
  requests_->with({{"model", model}, {"api", job.via}, {"code", code}}).inc();
  if (!result) {
    std::lock_guard lock(mu_);
    ++outcomes_[model].second;
    return;
  }
  const ClassifyResult& r = *result;
  const Timing& t = r.timing;
  Answer a{Clock::now(),
           model,
           {t.queue_us, t.decode_us, t.fabric_us, t.host_us, t.total_us},
           static_cast<double>(t.fabric_us) / std::max<uint32_t>(1, r.batch_size)};
  // The Prometheus children have their own locks: updated outside mu_, which guards only the
  // window and the totals below.
  images_->with({{"model", model}}).inc();
  for (size_t i = 0; i < std::size(kStages); ++i) {
    latency_->with({{"model", model}, {"stage", kStages[i]}}).observe(static_cast<double>(a.stage_us[i]) * 1e-6);
  }
  double dynamic_joules = 0;
  if (r.energy_uj > 0) {
    modeled_energy_->with({{"model", model}}).inc(r.energy_uj * 1e-6);
    // The plan's energy holds the board's static power over the layer times; the power model
    // adds static power itself, so only the dynamic part accumulates.
    const double static_uj =
        static_watts_ * static_cast<double>(t.modeled_fabric_us) / std::max<uint32_t>(1, r.batch_size);
    dynamic_joules = std::max(0.0, r.energy_uj - static_uj) * 1e-6;
  }
  std::lock_guard lock(mu_);
  ++outcomes_[model].first;
  modeled_joules_ += std::max(0.0, r.energy_uj) * 1e-6;
  modeled_dynamic_joules_ += dynamic_joules;
  recent_.push_back(std::move(a));
  trim(recent_.back().at);
}

void ServerStats::set_ready(bool ready) {
  std::lock_guard lock(mu_);
  ready_ = ready;
}

bool ServerStats::ready() const {
  std::lock_guard lock(mu_);
  return ready_;
}

double ServerStats::modeled_dynamic_joules() const {
  std::lock_guard lock(mu_);
  return modeled_dynamic_joules_;
}

void ServerStats::trim(Clock::time_point now) const {
  while (!recent_.empty() && now - recent_.front().at > window_) recent_.pop_front();
}

std::vector<StageLatency> ServerStats::latencies(const std::string& model) const {
  std::vector<StageLatency> out;
  for (size_t i = 0; i < std::size(kStages); ++i) {
    std::vector<uint64_t> v;
    for (const Answer& a : recent_) {
      if (model.empty() || a.model == model) v.push_back(a.stage_us[i]);
    }
    std::sort(v.begin(), v.end());
    StageLatency s;
    s.stage = kStages[i];
    s.count = v.size();
    s.p50_us = quantile(v, 0.50);
    s.p90_us = quantile(v, 0.90);
    s.p99_us = quantile(v, 0.99);
    s.max_us = v.empty() ? 0 : static_cast<double>(v.back());
    out.push_back(std::move(s));
  }
  return out;
}

TelemetrySnapshot ServerStats::snapshot() const {
  TelemetrySnapshot s;
  s.time = std::chrono::system_clock::now();
  s.device_kind = device_.kind;
  s.device_name = device_.name;
  s.board = device_.board;
  if (sampler_) {
    if (auto latest = sampler_->latest()) {
      s.power_watts = latest->watts;
      s.power_source = latest->power_source;
      s.temperature_c = latest->temperature_c;
      s.temperature_source = latest->temperature_source;
    }
    if (auto reading = sampler_->latest_power_reading()) s.rails_watts = reading->rails_watts;
    s.energy_joules = sampler_->energy_joules();
  }
  const auto now = Clock::now();
  // The window, or the time since start when that is shorter (rates right after start).
  const double seconds = std::chrono::duration<double>(std::min<Clock::duration>(window_, now - started_)).count();
  std::lock_guard lock(mu_);
  trim(now);
  s.ready = ready_;
  s.modeled_energy_joules = modeled_joules_;
  double busy_us = 0;
  for (const Answer& a : recent_) busy_us += a.fabric_busy_us;
  if (seconds > 0) {
    s.images_per_second = static_cast<double>(recent_.size()) / seconds;
    s.fabric_utilization = std::min(1.0, busy_us * 1e-6 / seconds);
  }
  for (const ServedModel* served : models_) {
    const std::string& name = served->name();
    ModelStats m;
    m.name = name;
    if (queue_) m.queue_depth = queue_->depth(served);
    s.queue_depth += m.queue_depth;
    const size_t n = static_cast<size_t>(
        std::count_if(recent_.begin(), recent_.end(), [&](const Answer& a) { return a.model == name; }));
    if (seconds > 0) m.images_per_second = static_cast<double>(n) / seconds;
    if (auto it = outcomes_.find(name); it != outcomes_.end()) {
      m.requests_ok = it->second.first;
      m.requests_failed = it->second.second;
    }
    if (auto it = batch_sizes_.find(name); it != batch_sizes_.end()) m.batch_sizes = it->second;
    m.latency = latencies(name);
    s.models.push_back(std::move(m));
  }
  return s;
}

std::string ServerStats::expose_metrics() const {
  // The sampler integrates the energy; the counter catches up with it at each scrape.
  if (sampler_) {
    std::lock_guard lock(energy_mu_);
    energy_->inc(sampler_->energy_joules() - energy_->value());
  }
  return registry_.expose();
}

}  // namespace tessera::telemetry
