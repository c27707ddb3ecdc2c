#include "server/telemetry/server_stats.h"

#include <algorithm>
#include <cmath>

#include "server/models/model_repository.h"

namespace tessera::telemetry {
namespace {

using Clock = std::chrono::steady_clock;

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
  const std::vector<std::string> stages(std::begin(kStages), std::end(kStages));
  for (const ServedModel* served : models_) model_series_[served->name()] = metrics_.add_model(served->name(), stages);
  // One daemon, one device: no `device` label yet (see metrics/tessera_metrics.h).
  device_series_ = metrics_.add_device({}, {device_.kind, device_.name, device_.board});
}

ServerStats::~ServerStats() = default;

void ServerStats::on_batch(const ServedModel& model, size_t size) {
  if (auto it = model_series_.find(model.name()); it != model_series_.end()) {
    it->second.batch_size->Observe(static_cast<double>(size));
  }
  std::lock_guard lock(mu_);
  ++batch_sizes_[model.name()][static_cast<uint32_t>(size)];
}

void ServerStats::on_answer(const InferenceJob& job, const Result<ClassifyResult>& result) {
  const std::string model = job.model ? job.model->name() : std::string();
  const char* code = result ? "OK" : status_code_name(result.status().code());
  metrics_.requests(model, job.via, code).Increment();
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
  // The Prometheus series have their own locks: updated outside mu_, which guards only the window
  // and the totals below. A model has series when it was served from the start (all are).
  const auto series = model_series_.find(model);
  if (series != model_series_.end()) {
    series->second.images->Increment();
    for (size_t i = 0; i < std::size(kStages); ++i) {
      series->second.stage_latency[i]->Observe(static_cast<double>(a.stage_us[i]) * 1e-6);
    }
  }
  double dynamic_joules = 0;
  if (r.energy_uj > 0) {
    if (series != model_series_.end()) series->second.modeled_energy->Increment(r.energy_uj * 1e-6);
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
  // prometheus-cpp has no gauge whose value a callback computes at scrape time (the old registry's
  // callback gauges), and a custom Collectable would have to rebuild the families' HELP and types by
  // hand. So each scrape updates the computed series from one snapshot, then serialises; the lock
  // keeps a concurrent scrape from interleaving its updates with this one's.
  std::lock_guard lock(scrape_mu_);
  const TelemetrySnapshot s = snapshot();
  for (const ModelStats& model : s.models) {
    if (auto it = model_series_.find(model.name); it != model_series_.end()) {
      it->second.queue_depth->Set(static_cast<double>(model.queue_depth));
    }
  }
  const metrics::DaemonSeries& daemon = metrics_.daemon();
  daemon.images_per_second->Set(s.images_per_second);
  daemon.ready->Set(s.ready ? 1.0 : 0.0);
  daemon.uptime->Set(std::chrono::duration<double>(Clock::now() - started_).count());
  device_series_.fabric_utilization->Set(s.fabric_utilization);
  device_series_.power->Set(s.power_watts.value_or(std::nan("")));
  device_series_.temperature->Set(s.temperature_c.value_or(std::nan("")));
  // The sampler integrates the energy; the counter catches up with it (a counter only goes up).
  device_series_.energy->Increment(std::max(0.0, s.energy_joules - device_series_.energy->Value()));
  return metrics_.expose();
}

}  // namespace tessera::telemetry
