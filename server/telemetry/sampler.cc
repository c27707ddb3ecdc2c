#include "server/telemetry/sampler.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <utility>

namespace tessera::telemetry {

TelemetrySampler::TelemetrySampler(std::vector<std::unique_ptr<PowerSource>> sources, TelemetrySamplerOptions options)
    : options_(std::move(options)) {
  for (auto& source : sources) {
    if (!source) continue;
    SourceState state;
    state.name = source->name();
    state.source = std::move(source);
    sources_.push_back(std::move(state));
  }
}

TelemetrySampler::~TelemetrySampler() { stop(); }

void TelemetrySampler::start() {
  std::lock_guard lifecycle(lifecycle_mu_);
  if (stopped_ || thread_.joinable()) return;
  thread_ = std::thread([this] { run(); });
}

void TelemetrySampler::stop() {
  std::lock_guard lifecycle(lifecycle_mu_);
  if (stopped_) return;
  stopped_ = true;
  {
    std::lock_guard lock(wake_mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void TelemetrySampler::run() {
  std::unique_lock lock(wake_mu_);
  while (!stopping_) {
    lock.unlock();
    sample_now();
    lock.lock();
    wake_.wait_for(lock, options_.interval, [this] { return stopping_; });
  }
}

std::optional<PowerReading> TelemetrySampler::read_source(SourceState& state) {
  Result<PowerReading> reading = Status::internal("not read");
  try {
    reading = state.source->read();
  } catch (const std::exception& e) {
    reading = Status::internal(std::string("threw: ") + e.what());
  }
  if (reading.is_ok()) {
    if (state.failing) spdlog::info("telemetry: power source {} works again", state.name);
    state.failing = false;
    return std::move(reading).value();
  }
  const Status& status = reading.status();
  if (status.code() == StatusCode::kUnimplemented) {
    spdlog::info("telemetry: power source {}: {}", state.name, status.message());
    state.unsupported = true;
  } else if (!state.failing) {
    spdlog::warn("telemetry: power source {} failed: {} (logged once until it recovers)", state.name,
                 status.to_string());
    state.failing = true;
  }
  return std::nullopt;
}

TelemetrySample TelemetrySampler::sample_now() {
  std::lock_guard sampling(sample_mu_);
  TelemetrySample sample;
  sample.steady_time = options_.steady_now();
  sample.time = options_.wall_now();
  std::optional<PowerReading> power_reading;
  for (SourceState& state : sources_) {
    if (sample.watts && sample.temperature_c) break;
    if (state.unsupported) continue;
    std::optional<PowerReading> reading = read_source(state);
    if (!reading) continue;
    if (!sample.temperature_c && reading->temperature_c) {
      sample.temperature_c = reading->temperature_c;
      sample.temperature_source = state.name;
    }
    if (!sample.watts && reading->watts) {
      sample.watts = reading->watts;
      sample.power_source = state.name;
      power_reading = std::move(reading);
    }
  }

  std::lock_guard lock(data_mu_);
  if (sample.watts && last_powered_ && sample.steady_time > last_powered_->steady_time) {
    const double seconds = std::chrono::duration<double>(sample.steady_time - last_powered_->steady_time).count();
    energy_joules_ += 0.5 * (*last_powered_->watts + *sample.watts) * seconds;
  }
  // A sample without power breaks the integration: no energy is assumed across the gap.
  if (!sample.watts) {
    last_powered_.reset();
  } else if (!last_powered_ || sample.steady_time >= last_powered_->steady_time) {
    last_powered_ = sample;
  }
  latest_power_reading_ = std::move(power_reading);
  if (options_.history_capacity > 0) {
    ring_.push_back(sample);
    while (ring_.size() > options_.history_capacity) ring_.pop_front();
  }
  latest_ = sample;
  return sample;
}

std::optional<TelemetrySample> TelemetrySampler::latest() const {
  std::lock_guard lock(data_mu_);
  return latest_;
}

std::vector<TelemetrySample> TelemetrySampler::history(size_t n) const {
  std::lock_guard lock(data_mu_);
  const size_t count = std::min(n, ring_.size());
  return std::vector<TelemetrySample>(ring_.end() - static_cast<std::ptrdiff_t>(count), ring_.end());
}

double TelemetrySampler::energy_joules() const {
  std::lock_guard lock(data_mu_);
  return energy_joules_;
}

std::string TelemetrySampler::power_source_name() const {
  std::lock_guard lock(data_mu_);
  return latest_ ? latest_->power_source : "";
}

std::optional<PowerReading> TelemetrySampler::latest_power_reading() const {
  std::lock_guard lock(data_mu_);
  return latest_power_reading_;
}

}  // namespace tessera::telemetry
