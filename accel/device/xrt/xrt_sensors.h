// The sensor reports XRT gives as JSON text (xrt::device::get_info<xrt::info::device::electrical>()
// and <...::thermal>()) turned into DeviceSensors. Pure functions, no XRT headers: XrtDevice feeds
// them, tests feed them sample text.
//
// The format is XRT's own (core/common/sensor.cpp, written out by boost::property_tree, so every
// value is a string): electrical is {"power_rails": [{"id", "description", "voltage": {"volts",
// "is_present"}, "current": {"amps", "is_present"}}], "power_consumption_watts",
// "power_consumption_max_watts", "power_consumption_warning"}; thermal is {"thermals":
// [{"location_id", "description", "temp_C", "is_present"}]}. Parsing is tolerant: numbers or
// numeric strings, "N/A" and missing keys leave a field absent, an "error_msg" becomes a note.
#pragma once

#include <string_view>

#include "accel/common/status.h"
#include "accel/device/device.h"

namespace tessera {

// Board power and per-rail watts (volts x amps where both are present). Board power is
// power_consumption_watts when positive, else the sum of the card's input rails (12v_pex,
// 12v_aux, 12v_aux_0, 12v_aux_1, 3v3_pex), as XRT computes it. UNIMPLEMENTED "unsupported: ..."
// when the text is not JSON or reports no power at all.
Result<DeviceSensors> parse_xrt_electrical(std::string_view json_text);

// Per-sensor temperatures of the present sensors and the hottest one. UNIMPLEMENTED
// "unsupported: ..." when the text is not JSON or reports no temperature.
Result<DeviceSensors> parse_xrt_thermal(std::string_view json_text);

// Both reports in one reading; either may be missing (its reason becomes a note). When neither
// gives anything: UNIMPLEMENTED when both are unsupported, else UNAVAILABLE (reading failed).
Result<DeviceSensors> merge_xrt_sensors(const Result<std::string>& electrical_json,
                                        const Result<std::string>& thermal_json);

}  // namespace tessera
