#include "server/telemetry/hwmon_source.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <utility>

namespace tessera::telemetry {
namespace {

namespace fs = std::filesystem;

// The number N of a name "<prefix>N<suffix>", or nullopt.
std::optional<int> numbered(std::string_view name, std::string_view prefix, std::string_view suffix) {
  if (!name.starts_with(prefix) || !name.ends_with(suffix) || name.size() <= prefix.size() + suffix.size()) {
    return std::nullopt;
  }
  const std::string_view digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  int n = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || ptr != digits.data() + digits.size()) return std::nullopt;
  return n;
}

// Entries of `dir` named "<prefix>N<suffix>", by N. Missing or unreadable dir: none.
std::map<int, fs::path> list_numbered(const fs::path& dir, std::string_view prefix, std::string_view suffix = "") {
  std::map<int, fs::path> out;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    if (auto n = numbered(it->path().filename().string(), prefix, suffix)) out.emplace(*n, it->path());
  }
  return out;
}

// fs::exists without exceptions (a permission problem counts as absent).
bool file_exists(const fs::path& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

// The content of a small sysfs file without surrounding whitespace.
Result<std::string> read_text(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return Status::not_found(path.string() + ": cannot open");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return Status::unavailable(path.string() + ": read error");
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  text.erase(text.begin(), std::find_if(text.begin(), text.end(), not_space));
  text.erase(std::find_if(text.rbegin(), text.rend(), not_space).base(), text.end());
  return text;
}

// A sysfs integer attribute; a note for `notes` when it cannot be read or is not a number.
std::optional<int64_t> read_integer(const fs::path& path, std::vector<std::string>& notes) {
  Result<std::string> text = read_text(path);
  if (!text.is_ok()) {
    notes.push_back(text.status().message());
    return std::nullopt;
  }
  int64_t v = 0;
  const std::string& s = *text;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || s.empty()) {
    notes.push_back(path.string() + ": not a number ('" + s.substr(0, 32) + "')");
    return std::nullopt;
  }
  return v;
}

// The first non-empty label file of `names` in `dir`, or "".
std::string first_label(const fs::path& dir, std::initializer_list<std::string> names) {
  for (const std::string& n : names) {
    Result<std::string> label = read_text(dir / n);
    if (label.is_ok() && !label->empty()) return *label;
  }
  return "";
}

// `key`, or "key#suffix" when `map` has it already.
template <class Map>
std::string unique_key(const Map& map, std::string key, const std::string& suffix) {
  return map.count(key) ? key + "#" + suffix : key;
}

// Reads the rails of one power monitor directory into `reading`.
void read_monitor(const fs::path& dir, const std::string& monitor, const std::string& instance, PowerReading& reading) {
  std::map<int, bool> channels;  // index -> has power<i>_input
  for (const auto& [i, path] : list_numbered(dir, "power", "_input")) channels[i] = true;
  for (const auto& [i, path] : list_numbered(dir, "curr", "_input")) channels.emplace(i, false);

  for (const auto& [i, has_power] : channels) {
    const std::string n = std::to_string(i);
    std::optional<double> watts;
    std::string kind = "power";
    if (has_power) {
      if (auto uw = read_integer(dir / ("power" + n + "_input"), reading.notes)) watts = static_cast<double>(*uw) / 1e6;
    }
    if (!watts && file_exists(dir / ("curr" + n + "_input"))) {
      kind = "curr";
      auto ma = read_integer(dir / ("curr" + n + "_input"), reading.notes);
      auto mv = read_integer(dir / ("in" + n + "_input"), reading.notes);
      if (ma && mv) watts = static_cast<double>(*ma) * static_cast<double>(*mv) / 1e6;
    }
    if (!watts) continue;
    std::string label = first_label(dir, {"power" + n + "_label", "curr" + n + "_label", "in" + n + "_label"});
    if (label.empty()) label = kind + n;
    reading.rails_watts[unique_key(reading.rails_watts, monitor + ":" + label, instance)] = *watts;
  }
}

bool is_power_monitor(const std::string& name, const std::vector<std::string>& prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](const std::string& p) { return !p.empty() && name.starts_with(p); });
}

// Whether monitor `name` in hwmon directory `dir` is one of `monitors` (by its name, or by where
// its `device` link leads); every monitor is when the list is empty.
bool is_selected(const fs::path& dir, const std::string& name, const std::vector<std::string>& monitors) {
  if (monitors.empty()) return true;
  std::error_code ec;
  const fs::path device = fs::canonical(dir / "device", ec);
  const std::string device_path = ec ? std::string() : device.string();
  return std::any_of(monitors.begin(), monitors.end(), [&](const std::string& m) {
    return name.find(m) != std::string::npos || (!device_path.empty() && device_path.find(m) != std::string::npos);
  });
}

// "a, b" of `items`, each with `suffix`.
std::string joined(const std::vector<std::string>& items, const std::string& suffix = "") {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item + suffix;
  return out;
}

// Every thermal zone's temperature into `reading`.
void read_thermal_zones(const fs::path& root, PowerReading& reading) {
  for (const auto& [i, zone] : list_numbered(root / "class" / "thermal", "thermal_zone")) {
    const std::string instance = zone.filename().string();
    auto millic = read_integer(zone / "temp", reading.notes);
    if (!millic) continue;
    Result<std::string> type = read_text(zone / "type");
    const std::string name = type.is_ok() && !type->empty() ? *type : instance;
    const double celsius = static_cast<double>(*millic) / 1000.0;
    reading.temperatures_c[unique_key(reading.temperatures_c, name, instance)] = celsius;
    reading.temperature_c = std::max(reading.temperature_c.value_or(celsius), celsius);
  }
}

}  // namespace

HwmonSource::HwmonSource(HwmonOptions options) : options_(std::move(options)) {}

Result<PowerReading> HwmonSource::read() {
  PowerReading reading;
  const fs::path hwmon_dir = options_.root / "class" / "hwmon";
  int monitors = 0;
  for (const auto& [i, dir] : list_numbered(hwmon_dir, "hwmon")) {
    // Kernels before 3.x kept the attributes in hwmonN/device/.
    fs::path attrs = dir;
    if (!file_exists(attrs / "name") && file_exists(dir / "device" / "name")) attrs = dir / "device";
    Result<std::string> name = read_text(attrs / "name");
    if (!name.is_ok() || !is_power_monitor(*name, options_.name_prefixes)) continue;
    if (!is_selected(dir, *name, options_.monitors)) continue;
    ++monitors;
    read_monitor(attrs, *name, dir.filename().string(), reading);
  }
  if (monitors == 0) {
    const std::string matching = options_.monitors.empty() ? "" : " matching " + joined(options_.monitors);
    return unsupported_source("no hwmon power monitor (" + joined(options_.name_prefixes, "*") + ")" + matching +
                              " under " + hwmon_dir.string());
  }
  if (!reading.rails_watts.empty()) {
    double total = 0;
    for (const auto& [rail, watts] : reading.rails_watts) total += watts;
    reading.watts = total;
  }
  read_thermal_zones(options_.root, reading);
  if (!reading.watts && !reading.temperature_c) {
    std::ostringstream why;
    why << "hwmon: " << monitors << " power monitor(s) but no readable rail or thermal zone";
    for (const std::string& note : reading.notes) why << "; " << note;
    return Status::unavailable(why.str());
  }
  return reading;
}

Result<std::map<unsigned, std::vector<std::string>>> parse_hwmon_rails(std::string_view text) {
  std::map<unsigned, std::vector<std::string>> rails;
  const auto bad = [&](std::string_view part, const std::string& why) {
    return Status::invalid_argument("--hwmon-rails: '" + std::string(part) + "' " + why +
                                    " (want I=MATCH[+MATCH...],..., e.g. 0=0000:3b:00.0,1=ina226_u79+ina226_u80)");
  };
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view part = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    const size_t eq = part.find('=');
    if (eq == std::string_view::npos) return bad(part, "has no '='");
    unsigned index = 0;
    const std::string_view digits = part.substr(0, eq);
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (digits.empty() || ec != std::errc() || ptr != digits.data() + digits.size()) {
      return bad(part, "does not start with a device index");
    }
    if (rails.count(index)) return bad(part, "names device " + std::to_string(index) + " again");
    std::vector<std::string>& matches = rails[index];
    for (std::string_view rest = part.substr(eq + 1);;) {
      const size_t plus = rest.find('+');
      const std::string_view match = rest.substr(0, plus);
      if (match.empty()) return bad(part, "has an empty MATCH");
      matches.emplace_back(match);
      if (plus == std::string_view::npos) break;
      rest.remove_prefix(plus + 1);
    }
    if (comma != std::string_view::npos && text.empty()) return bad(std::string(part) + ",", "ends with a comma");
  }
  return rails;
}

}  // namespace tessera::telemetry
