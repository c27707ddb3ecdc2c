#include "accel/device/xrt/xrt_sensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <utility>

namespace tessera {
namespace {

using nlohmann::json;

constexpr std::string_view kUnsupported = "unsupported: ";

Status unsupported(const std::string& why) { return Status::unimplemented(std::string(kUnsupported) + why); }

// The message without a leading "unsupported: ", for joining two of them.
std::string reason_of(const Status& status) {
  std::string_view m = status.message();
  if (m.starts_with(kUnsupported)) m.remove_prefix(kUnsupported.size());
  return std::string(m);
}

// A finite number given as a JSON number or a numeric string ("12.125"); nullopt for "N/A", "",
// other text, objects...
std::optional<double> number_of(const json& v) {
  if (v.is_number()) {
    const double d = v.get<double>();
    return std::isfinite(d) ? std::optional<double>(d) : std::nullopt;
  }
  if (!v.is_string()) return std::nullopt;
  const std::string& s = v.get_ref<const std::string&>();
  double d = 0;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, d);
  if (ec != std::errc() || ptr != end || !std::isfinite(d)) return std::nullopt;
  return d;
}

// A member of an object, or nullptr.
const json* member(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

std::string text_of(const json* v) {
  if (v == nullptr) return "";
  return v->is_string() ? v->get<std::string>() : v->dump();
}

// "is_present" as XRT writes it ("true"/"false"), or a JSON bool; present when absent.
bool is_present(const json& obj) {
  const json* p = member(obj, "is_present");
  if (p == nullptr) return true;
  if (p->is_boolean()) return p->get<bool>();
  return !(p->is_string() && p->get_ref<const std::string&>() == "false");
}

// Records the "error_msg" of `obj`, if any, as a note naming `where`.
void note_error(const json& obj, const std::string& where, std::vector<std::string>& notes) {
  if (const json* e = member(obj, "error_msg")) notes.push_back(where + ": " + text_of(e));
}

// The parsed report, or unsupported; `key` is the member holding the report's list
// ("power_rails" / "thermals"), `wrapper` the key xbutil's reports nest it under.
Result<json> parse_report(std::string_view text, const char* what, const char* key, const char* wrapper) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {
    return unsupported(std::string("XRT ") + what + " report is not JSON (" + e.what() + ")");
  }
  if (const json* inner = member(root, wrapper); inner != nullptr && member(root, key) == nullptr) {
    json unwrapped = *inner;
    root = std::move(unwrapped);
  }
  // An empty tree is written as "" by boost::property_tree: the platform has no such sensors.
  if (root.is_null() || (root.is_string() && root.get_ref<const std::string&>().empty()) ||
      (root.is_object() && root.empty())) {
    return unsupported(std::string("XRT reports no ") + what + " sensors");
  }
  if (!root.is_object()) {
    return unsupported(std::string("XRT ") + what + " report is not a JSON object (" + root.type_name() + ")");
  }
  return root;
}

// Sensor name: its id/location_id, else its description, else "<fallback><index>".
std::string sensor_name(const json& sensor, const char* id_key, const char* fallback, size_t index) {
  for (const char* key : {id_key, "description"}) {
    const json* v = member(sensor, key);
    if (v != nullptr && v->is_string() && !v->get_ref<const std::string&>().empty()) return v->get<std::string>();
  }
  return fallback + std::to_string(index);
}

// A reading "voltage"/"current" of a rail: `unit_key` ("volts"/"amps") when present.
std::optional<double> rail_value(const json& rail, const char* part, const char* unit_key, const std::string& name,
                                 std::vector<std::string>& notes) {
  const json* p = member(rail, part);
  if (p == nullptr || !p->is_object()) return std::nullopt;
  note_error(*p, "rail " + name + " " + part, notes);
  if (!is_present(*p)) return std::nullopt;
  const json* v = member(*p, unit_key);
  return v == nullptr ? std::nullopt : number_of(*v);
}

// XRT's board power from the card's input rails (sensor.cpp populate_power()).
bool is_input_rail(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  constexpr std::array<std::string_view, 5> kInputs = {"12v_pex", "12v_aux", "12v_aux_0", "12v_aux_1", "3v3_pex"};
  return std::find(kInputs.begin(), kInputs.end(), name) != kInputs.end();
}

}  // namespace

Result<DeviceSensors> parse_xrt_electrical(std::string_view json_text) {
  TESSERA_ASSIGN_OR_RETURN(const json root, parse_report(json_text, "electrical", "power_rails", "electrical"));
  DeviceSensors out;
  note_error(root, "electrical", out.notes);

  std::optional<double> input_watts;
  if (const json* rails = member(root, "power_rails")) {
    if (rails->is_array()) {
      for (size_t i = 0; i < rails->size(); ++i) {
        const json& rail = (*rails)[i];
        if (!rail.is_object()) continue;
        const std::string name = sensor_name(rail, "id", "rail", i);
        note_error(rail, "rail " + name, out.notes);
        const auto volts = rail_value(rail, "voltage", "volts", name, out.notes);
        const auto amps = rail_value(rail, "current", "amps", name, out.notes);
        if (!volts || !amps) continue;
        const double watts = *volts * *amps;
        out.rails_watts[name] = watts;
        const json* id = member(rail, "id");
        const json* desc = member(rail, "description");
        if (is_input_rail(text_of(id)) || is_input_rail(text_of(desc))) input_watts = input_watts.value_or(0) + watts;
      }
    } else {
      note_error(*rails, "power_rails", out.notes);
    }
  }

  const json* total = member(root, "power_consumption_watts");
  const std::optional<double> watts = total == nullptr ? std::nullopt : number_of(*total);
  if (watts && *watts > 0) {
    out.power_watts = *watts;
  } else if (input_watts && *input_watts > 0) {
    out.power_watts = input_watts;
  }
  if (!out.power_watts && out.rails_watts.empty()) {
    std::string why = "XRT electrical report has no power reading";
    if (total != nullptr) why += " (power_consumption_watts " + text_of(total) + ")";
    for (const std::string& n : out.notes) why += "; " + n;
    return unsupported(why);
  }
  return out;
}

Result<DeviceSensors> parse_xrt_thermal(std::string_view json_text) {
  TESSERA_ASSIGN_OR_RETURN(const json root, parse_report(json_text, "thermal", "thermals", "thermal"));
  DeviceSensors out;
  note_error(root, "thermal", out.notes);
  if (const json* sensors = member(root, "thermals")) {
    if (sensors->is_array()) {
      for (size_t i = 0; i < sensors->size(); ++i) {
        const json& sensor = (*sensors)[i];
        if (!sensor.is_object()) continue;
        const std::string name = sensor_name(sensor, "location_id", "sensor", i);
        note_error(sensor, "thermal " + name, out.notes);
        const json* temp = member(sensor, "temp_C");
        const auto celsius = temp == nullptr ? std::nullopt : number_of(*temp);
        if (!celsius || !is_present(sensor)) continue;
        out.temperatures_c[name] = *celsius;
        out.temperature_c = std::max(out.temperature_c.value_or(*celsius), *celsius);
      }
    } else {
      note_error(*sensors, "thermals", out.notes);
    }
  }
  if (!out.temperature_c) {
    std::string why = "XRT thermal report has no present sensor";
    for (const std::string& n : out.notes) why += "; " + n;
    return unsupported(why);
  }
  return out;
}

Result<DeviceSensors> merge_xrt_sensors(const Result<std::string>& electrical_json,
                                        const Result<std::string>& thermal_json) {
  Result<DeviceSensors> e = electrical_json.is_ok() ? parse_xrt_electrical(*electrical_json)
                                                    : Result<DeviceSensors>(electrical_json.status());
  Result<DeviceSensors> t =
      thermal_json.is_ok() ? parse_xrt_thermal(*thermal_json) : Result<DeviceSensors>(thermal_json.status());
  if (!e.is_ok() && !t.is_ok()) {
    const std::string both = reason_of(e.status()) + "; " + reason_of(t.status());
    const bool unsupported_both =
        e.status().code() == StatusCode::kUnimplemented && t.status().code() == StatusCode::kUnimplemented;
    return unsupported_both ? unsupported(both) : Status::unavailable("XRT sensors: " + both);
  }
  if (!t.is_ok()) {
    e->notes.push_back(reason_of(t.status()));
    return e;
  }
  if (!e.is_ok()) {
    t->notes.insert(t->notes.begin(), reason_of(e.status()));
    return t;
  }
  DeviceSensors out = std::move(e).value();
  out.temperature_c = t->temperature_c;
  out.temperatures_c = std::move(t->temperatures_c);
  out.notes.insert(out.notes.end(), t->notes.begin(), t->notes.end());
  return out;
}

}  // namespace tessera
