// PowerSource: one place tesserad can read board power and temperature from (XRT's card sensors,
// Linux hwmon rails, the board profile's power model). The TelemetrySampler asks its sources in
// priority order; a source that is not there answers UNIMPLEMENTED "unsupported: why".
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "accel/common/status.h"

namespace tessera::telemetry {

// One reading of a source. Fields a source does not measure are absent.
struct PowerReading {
  std::optional<double> watts;                   // total board power
  std::optional<double> temperature_c;           // the hottest zone/sensor
  std::map<std::string, double> rails_watts;     // per rail, e.g. "ina226_u76:power1" -> 1.25
  std::map<std::string, double> temperatures_c;  // per zone/sensor, e.g. "cpu-thermal" -> 47.5
  std::vector<std::string> notes;                // what was skipped and why
};

class PowerSource {
 public:
  virtual ~PowerSource() = default;
  // Short, stable name for logs, metrics labels and samples: "xrt", "hwmon", "model".
  virtual std::string name() const = 0;
  // Reads the source now. UNIMPLEMENTED "unsupported: ..." when the source is not there (the
  // sampler logs it once and asks no more); other errors are transient. Never throws. The sampler
  // calls it from one thread at a time.
  virtual Result<PowerReading> read() = 0;
};

// UNIMPLEMENTED "unsupported: `why`", the answer of a source that is not there.
inline Status unsupported_source(const std::string& why) { return Status::unimplemented("unsupported: " + why); }

}  // namespace tessera::telemetry
