// TelemetrySampler: a thread that reads the power sources every interval and keeps a bounded ring
// of samples and an energy counter (joules, trapezoid rule between consecutive samples with power).
// Per sample, power comes from the first source (in the given priority order) that reports watts,
// temperature from the first that reports a temperature. A source that answers "unsupported" is
// logged once and not asked again; a failing one is logged once per run of failures. Nothing
// here ever fails a request. All public members are thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server/telemetry/power_source.h"

namespace tessera::telemetry {

struct TelemetrySample {
  std::chrono::system_clock::time_point time;         // wall clock, for display
  std::chrono::steady_clock::time_point steady_time;  // what intervals and energy use
  std::optional<double> watts;
  std::optional<double> temperature_c;
  std::string power_source;        // name of the source of `watts`; "" without
  std::string temperature_source;  // name of the source of `temperature_c`; "" without
};

struct TelemetrySamplerOptions {
  std::chrono::milliseconds interval{1000};
  size_t history_capacity = 3600;  // samples kept (an hour at 1 s)
  // Clocks, replaceable so tests control time.
  std::function<std::chrono::steady_clock::time_point()> steady_now = std::chrono::steady_clock::now;
  std::function<std::chrono::system_clock::time_point()> wall_now = std::chrono::system_clock::now;
};

class TelemetrySampler {
 public:
  // `sources` in priority order, e.g. {device (XRT), hwmon, model}.
  explicit TelemetrySampler(std::vector<std::unique_ptr<PowerSource>> sources, TelemetrySamplerOptions options = {});
  // stop()s.
  ~TelemetrySampler();
  TelemetrySampler(const TelemetrySampler&) = delete;
  TelemetrySampler& operator=(const TelemetrySampler&) = delete;

  // Starts the thread: a sample at once, then one every interval. No-op when running or stopped.
  void start();
  // Stops and joins the thread promptly (it is woken from its wait). Idempotent.
  void stop();

  // Takes one sample now (what the thread does each interval), records and returns it.
  TelemetrySample sample_now();

  // The newest sample; nullopt before the first.
  std::optional<TelemetrySample> latest() const;
  // The newest min(n, kept) samples, oldest first.
  std::vector<TelemetrySample> history(size_t n) const;
  // Energy integrated since construction, in joules.
  double energy_joules() const;
  // The source of the newest sample's power ("" when it had none or before the first sample).
  std::string power_source_name() const;
  // The full reading (rails, zones, notes) behind the newest sample's power; nullopt without.
  std::optional<PowerReading> latest_power_reading() const;

  std::chrono::milliseconds interval() const { return options_.interval; }

 private:
  struct SourceState {
    std::unique_ptr<PowerSource> source;
    std::string name;
    bool unsupported = false;  // answered UNIMPLEMENTED: asked no more
    bool failing = false;      // the last read failed (logged once per run of failures)
  };

  // Reads a source, logging its state changes; nullopt when it gave nothing.
  std::optional<PowerReading> read_source(SourceState& state);
  void run();

  const TelemetrySamplerOptions options_;

  std::mutex sample_mu_;  // serialises sample_now(): the sources are read by one thread at a time
  std::vector<SourceState> sources_;

  mutable std::mutex data_mu_;
  std::deque<TelemetrySample> ring_;
  std::optional<TelemetrySample> latest_;
  std::optional<PowerReading> latest_power_reading_;
  double energy_joules_ = 0;
  std::optional<TelemetrySample> last_powered_;  // previous sample, when it had watts

  std::mutex lifecycle_mu_;  // start()/stop()
  std::mutex wake_mu_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by wake_mu_
  bool stopped_ = false;   // guarded by lifecycle_mu_
  std::thread thread_;
};

}  // namespace tessera::telemetry
