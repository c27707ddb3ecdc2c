// HwmonSource: board power from the Linux hwmon power monitors of ZynqMP boards (INA226 and the
// other ina2xx/ina3221 parts on ZCU102/ZCU104-class boards) and temperature from the thermal
// zones, all read from sysfs under a configurable root so tests use a fake tree.
//
// Per hwmon device whose `name` is a power monitor, per channel i: power<i>_input (microwatts),
// or, when that is absent or unreadable, curr<i>_input (mA) x in<i>_input (mV). The rail is
// named "<name>:<label>" (power<i>_label, curr<i>_label or in<i>_label) or "<name>:power<i>" /
// "<name>:curr<i>". Board watts = the sum of the rails. Temperature = the hottest of
// <root>/class/thermal/thermal_zone*/temp (millidegrees C, named by `type`).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "server/telemetry/power_source.h"

namespace tessera::telemetry {

struct HwmonOptions {
  std::filesystem::path root = "/sys";               // sysfs mount point
  std::vector<std::string> name_prefixes = {"ina"};  // hwmon `name`s that count as power monitors
};

class HwmonSource : public PowerSource {
 public:
  explicit HwmonSource(HwmonOptions options = {});

  std::string name() const override { return "hwmon"; }
  // Rescans the tree on every read. Unreadable or non-numeric files are skipped (a note says
  // which and why). UNIMPLEMENTED when no power monitor exists under <root>/class/hwmon;
  // UNAVAILABLE when monitors exist but neither a rail nor a thermal zone could be read.
  Result<PowerReading> read() override;

 private:
  HwmonOptions options_;
};

}  // namespace tessera::telemetry
