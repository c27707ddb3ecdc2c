#include "server/telemetry/telemetry_json.h"

#include <chrono>

namespace tessera::telemetry {

using nlohmann::json;

namespace {

// Absent readings are null, not 0: "no sensor" differs from "0 W".
json optional_number(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

}  // namespace

json to_json(const TelemetrySnapshot& s) {
  json models = json::array();
  for (const ModelStats& m : s.models) {
    json batches = json::array();
    for (const auto& [size, count] : m.batch_sizes) batches.push_back({{"size", size}, {"batches", count}});
    json latency = json::array();
    for (const StageLatency& l : m.latency) {
      latency.push_back({{"stage", l.stage},
                         {"p50_us", l.p50_us},
                         {"p90_us", l.p90_us},
                         {"p99_us", l.p99_us},
                         {"max_us", l.max_us},
                         {"count", l.count}});
    }
    models.push_back({{"name", m.name},
                      {"queue_depth", m.queue_depth},
                      {"images_per_second", m.images_per_second},
                      {"requests_ok", m.requests_ok},
                      {"requests_failed", m.requests_failed},
                      {"batch_sizes", std::move(batches)},
                      {"latency", std::move(latency)}});
  }
  json devices = json::array();
  for (const DeviceStats& d : s.devices) {
    devices.push_back({{"index", d.index},
                       {"kind", d.kind},
                       {"name", d.name},
                       {"board", d.board},
                       {"state", d.state},
                       {"power_watts", optional_number(d.power_watts)},
                       {"power_source", d.power_source},
                       {"energy_joules", d.energy_joules},
                       {"temperature_c", optional_number(d.temperature_c)},
                       {"fabric_utilization", d.fabric_utilization},
                       {"images_per_second", d.images_per_second},
                       {"images", d.images},
                       {"errors", d.errors}});
  }
  return {{"time_unix_ms", std::chrono::duration_cast<std::chrono::milliseconds>(s.time.time_since_epoch()).count()},
          {"device_kind", s.device_kind},
          {"device_name", s.device_name},
          {"board", s.board},
          {"power_watts", optional_number(s.power_watts)},
          {"power_source", s.power_source},
          {"energy_joules", s.energy_joules},
          {"temperature_c", optional_number(s.temperature_c)},
          {"temperature_source", s.temperature_source},
          {"rails_watts", s.rails_watts},
          {"fabric_utilization", s.fabric_utilization},
          {"images_per_second", s.images_per_second},
          {"queue_depth", s.queue_depth},
          {"modeled_energy_joules", s.modeled_energy_joules},
          {"ready", s.ready},
          {"models", std::move(models)},
          {"devices", std::move(devices)}};
}

}  // namespace tessera::telemetry
