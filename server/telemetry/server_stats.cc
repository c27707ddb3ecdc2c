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

ServerStats::ServerStats(const ModelRepository* repository, std::vector<DeviceLabels> devices,
                         const InferenceQueue* queue, std::chrono::seconds window)
    : repository_(repository),
      devices_(std::move(devices)),
      queue_(queue),
      window_(window),
      device_totals_(devices_.size()) {
  if (repository_) {
    for (const std::string& name : repository_->names()) add_model(name);
  }
  for (const DeviceLabels& device : devices_) {
    device_series_.push_back(metrics_.add_device(device.index, {device.kind, device.name, device.board}));
  }
}

ServerStats::~ServerStats() = default;

void ServerStats::add_model(const std::string& name) { (void)series_of(name); }

const metrics::ModelSeries& ServerStats::series_of(const std::string& name) const {
  std::lock_guard lock(series_mu_);
  auto it = model_series_.find(name);
  if (it == model_series_.end()) {
    const std::vector<std::string> stages(std::begin(kStages), std::end(kStages));
    it = model_series_.emplace(name, metrics_.add_model(name, stages)).first;
  }
  return it->second;
}

size_t ServerStats::device_slot(int index) const {
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (static_cast<int>(devices_[i].index) == index) return i;
  }
  return devices_.size();
}

void ServerStats::on_device_error(unsigned index) {
  const size_t slot = device_slot(static_cast<int>(index));
  if (slot == devices_.size()) return;
  device_series_[slot].errors->Increment();
  std::lock_guard lock(mu_);
  ++device_totals_[slot].errors;
}

void ServerStats::on_fleet_bad_answer(const std::string& peer) const { metrics_.fleet_bad_answers(peer).Increment(); }

void ServerStats::on_batch(const ServedModel& model, size_t size) {
  series_of(model.name()).batch_size->Observe(static_cast<double>(size));
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
           static_cast<double>(t.fabric_us) / std::max<uint32_t>(1, r.batch_size),
           r.device};
  const size_t slot = device_slot(r.device);
  // The Prometheus series have their own locks: updated outside mu_, which guards only the window
  // and the totals below.
  const metrics::ModelSeries& series = series_of(model);
  series.images->Increment();
  for (size_t i = 0; i < std::size(kStages); ++i) {
    series.stage_latency[i]->Observe(static_cast<double>(a.stage_us[i]) * 1e-6);
  }
  double dynamic_joules = 0;
  if (r.energy_uj > 0) {
    series.modeled_energy->Increment(r.energy_uj * 1e-6);
    // The plan's energy holds the board's static power over the layer times; the power model
    // adds static power itself, so only the dynamic part accumulates.
    const double static_watts = slot < devices_.size() ? devices_[slot].static_watts : 0.0;
    const double static_uj =
        static_watts * static_cast<double>(t.modeled_fabric_us) / std::max<uint32_t>(1, r.batch_size);
    dynamic_joules = std::max(0.0, r.energy_uj - static_uj) * 1e-6;
  }
  if (slot < devices_.size()) device_series_[slot].images->Increment();
  std::lock_guard lock(mu_);
  ++outcomes_[model].first;
  modeled_joules_ += std::max(0.0, r.energy_uj) * 1e-6;
  if (slot < devices_.size()) {
    device_totals_[slot].modeled_dynamic_joules += dynamic_joules;
    ++device_totals_[slot].images;
  }
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

double ServerStats::modeled_dynamic_joules(unsigned index) const {
  const size_t slot = device_slot(static_cast<int>(index));
  std::lock_guard lock(mu_);
  return slot < devices_.size() ? device_totals_[slot].modeled_dynamic_joules : 0.0;
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
  if (!devices_.empty()) {
    s.device_kind = devices_.front().kind;
    s.device_name = devices_.front().name;
    s.board = devices_.front().board;
    if (const TelemetrySampler* sampler = devices_.front().sampler) {
      if (auto latest = sampler->latest()) {
        s.power_source = latest->power_source;
        s.temperature_source = latest->temperature_source;
      }
      if (auto reading = sampler->latest_power_reading()) s.rails_watts = reading->rails_watts;
    }
  }
  // The models served now, and their queues' depths (summed over a model's versions).
  std::map<std::string, size_t> depths;
  if (repository_) {
    for (const auto& served : repository_->models()) depths[served->name()] += queue_ ? queue_->depth(served.get()) : 0;
  }
  const auto now = Clock::now();
  // The window, or the time since start when that is shorter (rates right after start).
  const double seconds = std::chrono::duration<double>(std::min<Clock::duration>(window_, now - started_)).count();
  std::lock_guard lock(mu_);
  trim(now);
  s.ready = ready_;
  s.modeled_energy_joules = modeled_joules_;
  if (seconds > 0) s.images_per_second = static_cast<double>(recent_.size()) / seconds;
  device_stats(s, seconds);
  for (const auto& [model_name, depth] : depths) {
    const std::string& name = model_name;  // a lambda below captures it (not a structured binding)
    ModelStats m;
    m.name = name;
    m.queue_depth = depth;
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

void ServerStats::device_stats(TelemetrySnapshot& s, double seconds) const {
  std::vector<double> busy_us(devices_.size() + 1, 0.0), images(devices_.size() + 1, 0.0);
  for (const Answer& a : recent_) {
    const size_t slot = device_slot(a.device);
    busy_us[slot] += a.fabric_busy_us;
    images[slot] += 1;
  }
  // The daemon's figures: power and energy add up over the devices, the hottest one's temperature,
  // the mean utilisation (the host-only answers' fabric time counts for no device).
  double utilization = 0;
  for (size_t i = 0; i < devices_.size(); ++i) {
    const DeviceLabels& labels = devices_[i];
    DeviceStats d;
    d.index = labels.index;
    d.kind = labels.kind;
    d.name = labels.name;
    d.board = labels.board;
    if (labels.health) d.state = device_state_name(labels.health->health().state);
    if (labels.sampler) {
      if (auto latest = labels.sampler->latest()) {
        d.power_watts = latest->watts;
        d.power_source = latest->power_source;
        d.temperature_c = latest->temperature_c;
      }
      d.energy_joules = labels.sampler->energy_joules();
    }
    if (seconds > 0) {
      d.images_per_second = images[i] / seconds;
      d.fabric_utilization = std::min(1.0, busy_us[i] * 1e-6 / seconds);
    }
    d.images = device_totals_[i].images;
    d.errors = device_totals_[i].errors;
    if (d.power_watts) s.power_watts = s.power_watts.value_or(0.0) + *d.power_watts;
    if (d.temperature_c) s.temperature_c = std::max(s.temperature_c.value_or(*d.temperature_c), *d.temperature_c);
    s.energy_joules += d.energy_joules;
    utilization += d.fabric_utilization;
    s.devices.push_back(std::move(d));
  }
  if (!devices_.empty()) s.fabric_utilization = utilization / static_cast<double>(devices_.size());
}

std::string ServerStats::expose_metrics() const {
  // prometheus-cpp has no gauge whose value a callback computes at scrape time (the old registry's
  // callback gauges), and a custom Collectable would have to rebuild the families' HELP and types by
  // hand. So each scrape updates the computed series from one snapshot, then serialises; the lock
  // keeps a concurrent scrape from interleaving its updates with this one's.
  std::lock_guard lock(scrape_mu_);
  const TelemetrySnapshot s = snapshot();
  for (const ModelStats& model : s.models) {
    series_of(model.name).queue_depth->Set(static_cast<double>(model.queue_depth));
  }
  const metrics::DaemonSeries& daemon = metrics_.daemon();
  daemon.ready->Set(s.ready ? 1.0 : 0.0);
  daemon.uptime->Set(std::chrono::duration<double>(Clock::now() - started_).count());
  if (connection_figures_) {
    const ConnectionFigures connections = connection_figures_();
    daemon.http_connections_open->Set(static_cast<double>(connections.open));
    const double refused = static_cast<double>(connections.refused);
    daemon.http_connections_refused->Increment(std::max(0.0, refused - daemon.http_connections_refused->Value()));
  }
  for (size_t i = 0; i < s.devices.size() && i < device_series_.size(); ++i) {
    const DeviceStats& d = s.devices[i];
    const metrics::DeviceSeries& series = device_series_[i];
    series.fabric_utilization->Set(d.fabric_utilization);
    series.power->Set(d.power_watts.value_or(std::nan("")));
    series.temperature->Set(d.temperature_c.value_or(std::nan("")));
    series.serving->Set(d.state == device_state_name(DeviceState::kServing) ? 1.0 : 0.0);
    // The sampler integrates the energy; the counter catches up with it (a counter only goes up).
    series.energy->Increment(std::max(0.0, d.energy_joules - series.energy->Value()));
  }
  return metrics_.expose();
}

}  // namespace tessera::telemetry
