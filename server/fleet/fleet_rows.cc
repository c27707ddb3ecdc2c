#include "server/fleet/fleet_rows.h"

#include <algorithm>

namespace tessera::fleet {

using nlohmann::json;

namespace {

// telemetry[key] when it is a number (null otherwise: absent, null, or the wrong type).
json number_field(const json& telemetry, const char* key) {
  const auto it = telemetry.find(key);
  return it != telemetry.end() && it->is_number() ? *it : json(nullptr);
}

json string_field(const json& telemetry, const char* key) {
  const auto it = telemetry.find(key);
  return it != telemetry.end() && it->is_string() ? *it : json(nullptr);
}

json model_names(const json& telemetry) {
  json names = json::array();
  const auto models = telemetry.find("models");
  if (models == telemetry.end() || !models->is_array()) return names;
  for (const json& m : *models) {
    if (m.is_object() && m.contains("name") && m["name"].is_string()) names.push_back(m["name"]);
  }
  return names;
}

// A row with every field, nothing known yet.
json empty_row(const std::string& target) {
  return {{"target", target},         {"self", false},
          {"reachable", false},       {"ready", false},
          {"device_kind", nullptr},   {"board", nullptr},
          {"models", json::array()},  {"images_per_second", nullptr},
          {"power_watts", nullptr},   {"temperature_c", nullptr},
          {"queue_depth", nullptr},   {"p99_us", nullptr},
          {"devices", json::array()}, {"error", nullptr}};
}

void fill_from_telemetry(json& row, const json& telemetry) {
  row["device_kind"] = string_field(telemetry, "device_kind");
  row["board"] = string_field(telemetry, "board");
  row["models"] = model_names(telemetry);
  row["images_per_second"] = number_field(telemetry, "images_per_second");
  row["power_watts"] = number_field(telemetry, "power_watts");
  row["temperature_c"] = number_field(telemetry, "temperature_c");
  row["queue_depth"] = number_field(telemetry, "queue_depth");
  row["p99_us"] = worst_p99_us(telemetry);
  // Per device instance (a peer from before instance groups has none).
  if (const auto it = telemetry.find("devices"); it != telemetry.end() && it->is_array()) {
    for (const json& device : *it) {
      if (!device.is_object()) continue;
      row["devices"].push_back({{"index", number_field(device, "index")},
                                {"state", string_field(device, "state")},
                                {"images_per_second", number_field(device, "images_per_second")},
                                {"power_watts", number_field(device, "power_watts")},
                                {"temperature_c", number_field(device, "temperature_c")},
                                {"fabric_utilization", number_field(device, "fabric_utilization")}});
    }
  }
}

// "HTTP 401: missing bearer token" from an error answer ({"error":{"message"}} when it has one).
std::string http_error_text(const ProbeReply& reply) {
  std::string text = "HTTP " + std::to_string(reply.status);
  const json body = json::parse(reply.body, nullptr, false);
  if (!body.is_discarded() && body.is_object() && body.contains("error") && body["error"].is_object() &&
      body["error"].contains("message") && body["error"]["message"].is_string()) {
    text += ": " + body["error"]["message"].get<std::string>();
  }
  return text;
}

}  // namespace

json worst_p99_us(const json& telemetry) {
  json worst = nullptr;
  const auto models = telemetry.find("models");
  if (models == telemetry.end() || !models->is_array()) return worst;
  for (const json& m : *models) {
    if (!m.is_object() || !m.contains("latency") || !m["latency"].is_array()) continue;
    for (const json& l : m["latency"]) {
      if (!l.is_object() || l.value("stage", "") != "total") continue;
      const auto p99 = l.find("p99_us");
      const auto count = l.find("count");
      if (p99 == l.end() || !p99->is_number() || count == l.end() || !count->is_number() || count->get<double>() <= 0) {
        continue;
      }
      if (worst.is_null() || p99->get<double>() > worst.get<double>()) worst = *p99;
    }
  }
  return worst;
}

json peer_row(const std::string& target, const ProbeReply& telemetry, const ProbeReply& ready) {
  json row = empty_row(target);
  std::string error;
  auto note = [&](const std::string& what) { error += (error.empty() ? "" : "; ") + what; };

  row["reachable"] = telemetry.status != 0 || ready.status != 0;
  if (telemetry.status == 0 && ready.status == 0) {
    // Neither question got an answer: one reason (both usually say the same).
    row["error"] = telemetry.error == ready.error ? telemetry.error : telemetry.error + "; " + ready.error;
    return row;
  }
  if (telemetry.status == 200) {
    const json body = json::parse(telemetry.body, nullptr, false);
    if (body.is_object()) {
      fill_from_telemetry(row, body);
    } else {
      note("telemetry: the answer is not a JSON object");
    }
  } else {
    note("telemetry: " + (telemetry.status == 0 ? telemetry.error : http_error_text(telemetry)));
  }
  if (ready.status == 200) {
    const json body = json::parse(ready.body, nullptr, false);
    row["ready"] = body.is_object() && body.value("ready", false) == true;
  } else if (ready.status != 0) {
    // A draining daemon answers 400 "not ready": reachable, not ready, and no fault to report.
    if (ready.status != 400) note("readiness: " + http_error_text(ready));
  } else {
    note("readiness: " + ready.error);
  }
  if (!error.empty()) row["error"] = error;
  return row;
}

json self_row(const std::string& target, const json& telemetry, bool ready) {
  json row = empty_row(target);
  row["self"] = true;
  row["reachable"] = true;
  row["ready"] = ready;
  fill_from_telemetry(row, telemetry);
  return row;
}

}  // namespace tessera::fleet
