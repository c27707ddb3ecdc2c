#include "server/telemetry/model_source.h"

#include <cmath>
#include <exception>
#include <utility>

namespace tessera::telemetry {

ModelSource::ModelSource(double static_watts, EnergyCounter dynamic_joules, Clock clock)
    : static_watts_(static_watts), dynamic_joules_(std::move(dynamic_joules)), clock_(std::move(clock)) {}

Result<PowerReading> ModelSource::read() {
  if (!dynamic_joules_) return unsupported_source("no power model (no energy counter)");
  double joules = 0;
  try {
    joules = dynamic_joules_();
  } catch (const std::exception& e) {
    return Status::unavailable(std::string("power model: energy counter: ") + e.what());
  }
  if (!std::isfinite(joules) || joules < 0) {
    return Status::unavailable("power model: energy counter gave " + std::to_string(joules) + " J");
  }
  const auto now = clock_();
  PowerReading reading;
  double dynamic_watts = 0;
  if (last_time_ && now > *last_time_) {
    // A counter that went down was restarted (e.g. the engine was reloaded): all of it is new.
    const double delta = joules >= last_joules_ ? joules - last_joules_ : joules;
    dynamic_watts = delta / std::chrono::duration<double>(now - *last_time_).count();
  }
  if (!last_time_ || now > *last_time_) {
    last_time_ = now;
    last_joules_ = joules;
  }
  reading.watts = static_watts_ + dynamic_watts;
  reading.rails_watts["static"] = static_watts_;
  reading.rails_watts["dynamic"] = dynamic_watts;
  return reading;
}

}  // namespace tessera::telemetry
