// HwmonSource: board power from the Linux hwmon power monitors of ZynqMP boards (INA226 and the
// other ina2xx/ina3221 parts on ZCU102/ZCU104-class boards) and temperature from the thermal
// zones, all read from sysfs under a configurable root so tests use a fake tree.
//
// Per hwmon device whose `name` is a power monitor, per channel i: power<i>_input (microwatts),
// or, when that is absent or unreadable, curr<i>_input (mA) x in<i>_input (mV). The rail is
// named "<name>:<label>" (power<i>_label, curr<i>_label or in<i>_label) or "<name>:power<i>" /
// "<name>:curr<i>". Board watts = the sum of the rails. Temperature = the hottest of
// <root>/class/thermal/thermal_zone*/temp (millidegrees C, named by `type`).
//
// Several device instances: each reads only its own monitors (HwmonOptions::monitors), e.g. the
// rails of its own card (by the PCI address its hwmon's `device` link leads to) or of its own
// compute unit's supply (by the monitor's name). parse_hwmon_rails() reads the daemon's
// --hwmon-rails setting into these lists.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "server/telemetry/power_source.h"

namespace tessera::telemetry {

struct HwmonOptions {
  std::filesystem::path root = "/sys";               // sysfs mount point
  std::vector<std::string> name_prefixes = {"ina"};  // hwmon `name`s that count as power monitors
  // Only the power monitors whose `name`, or the sysfs path their `device` link resolves to
  // (".../0000:af:00.0/...", ".../i2c-3/3-0040"), contains one of these; empty: every monitor.
  std::vector<std::string> monitors = {};
};

// --hwmon-rails: which hwmon power monitors are whose, "I=MATCH[+MATCH...],..." (device instance
// I reads the monitors that match one of its MATCHes, as HwmonOptions::monitors). Empty text is
// no map. INVALID_ARGUMENT naming the bad part: no '=', an index that is not a number or comes
// twice, an empty MATCH.
Result<std::map<unsigned, std::vector<std::string>>> parse_hwmon_rails(std::string_view text);

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
