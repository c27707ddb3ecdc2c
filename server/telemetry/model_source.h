// ModelSource: board power on the emulator, from the board profile's power model. The engine
// accumulates the modeled dynamic energy of what it ran (the planned per-layer energies); this
// source turns it into watts: static + delta(dynamic joules) / delta(t) since the previous read.
// It has no temperature.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "server/telemetry/power_source.h"

namespace tessera::telemetry {

class ModelSource : public PowerSource {
 public:
  // Total modeled dynamic energy in joules so far (monotonic; a decrease counts as a restart
  // from zero). Called on the sampler's thread.
  using EnergyCounter = std::function<double()>;
  using Clock = std::function<std::chrono::steady_clock::time_point()>;

  // `static_watts`: the board profile's static (idle) power.
  ModelSource(double static_watts, EnergyCounter dynamic_joules, Clock clock = std::chrono::steady_clock::now);

  std::string name() const override { return "model"; }
  // The first read has no interval yet and reports static watts. UNAVAILABLE when the counter
  // throws or gives a negative or non-finite value.
  Result<PowerReading> read() override;

 private:
  double static_watts_;
  EnergyCounter dynamic_joules_;
  Clock clock_;
  std::optional<std::chrono::steady_clock::time_point> last_time_;
  double last_joules_ = 0;
};

}  // namespace tessera::telemetry
