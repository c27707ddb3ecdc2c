#include "server/fleet/fleet_rows.h"

#include <algorithm>
#include <string>
#include <vector>

namespace tessera::fleet {

using nlohmann::json;

namespace {

// At most this many faults are named in a row's error; the rest are counted.
constexpr size_t kMaxFaultsNamed = 3;
// A peer's own error message is cut to this many bytes in its row.
constexpr size_t kMaxPeerMessageBytes = 200;

// Reads a peer's JSON without trusting its types: a field that is there with the wrong type reads
// as absent and is noted ("ready must be a boolean"). No read throws, unlike nlohmann's value()
// and get<T>(), which throw type_error on a type the caller did not expect.
class FieldReader {
 public:
  // obj[key] when it is a number, else null (absent and null are no fault).
  json number(const json& obj, const char* key, const std::string& where = "") {
    return value_of(typed(obj, key, where, "a number", [](const json& v) { return v.is_number(); }));
  }
  json string(const json& obj, const char* key, const std::string& where = "") {
    return value_of(typed(obj, key, where, "a string", [](const json& v) { return v.is_string(); }));
  }
  json boolean(const json& obj, const char* key, const std::string& where = "") {
    return value_of(typed(obj, key, where, "a boolean", [](const json& v) { return v.is_boolean(); }));
  }
  // obj[key] when it is an array, else nullptr.
  const json* array(const json& obj, const char* key, const std::string& where = "") {
    return typed(obj, key, where, "an array", [](const json& v) { return v.is_array(); });
  }
  // `v` (named `where`) is an object, or a fault.
  bool object(const json& v, const std::string& where) {
    if (!v.is_object()) note(where + " must be an object");
    return v.is_object();
  }
  // "bad answer: ready must be a boolean; ..." or "" without faults.
  std::string faults() const {
    if (faults_.empty()) return "";
    std::string text = "bad answer: ";
    for (size_t i = 0; i < faults_.size(); ++i) text += (i ? "; " : "") + faults_[i];
    if (more_ > 0) text += " (and " + std::to_string(more_) + " more)";
    return text;
  }

 private:
  // obj[key] when it has the type, else nullptr (noting the fault when it is there, not null).
  template <typename IsType>
  const json* typed(const json& obj, const char* key, const std::string& where, const char* type, IsType is_type) {
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return nullptr;
    if (is_type(*it)) return &*it;
    note(where + key + " must be " + type);
    return nullptr;
  }
  static json value_of(const json* v) { return v != nullptr ? *v : json(nullptr); }
  // Keeps the first few distinct faults and counts the rest (an answer may hold many).
  void note(std::string fault) {
    if (std::find(faults_.begin(), faults_.end(), fault) != faults_.end()) return;
    if (faults_.size() < kMaxFaultsNamed) {
      faults_.push_back(std::move(fault));
    } else {
      ++more_;
    }
  }

  std::vector<std::string> faults_;
  size_t more_ = 0;
};

std::string at(const char* array, size_t i) { return std::string(array) + "[" + std::to_string(i) + "]"; }

json model_names(const json& telemetry, FieldReader& read) {
  json names = json::array();
  const json* models = read.array(telemetry, "models");
  if (models == nullptr) return names;
  for (size_t i = 0; i < models->size(); ++i) {
    const json& m = (*models)[i];
    if (!read.object(m, at("models", i))) continue;
    if (json name = read.string(m, "name", at("models", i) + "."); !name.is_null()) names.push_back(std::move(name));
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

// The slowest model's p99 of the "total" stage, reading through `read`.
json worst_p99_us(const json& telemetry, FieldReader& read) {
  json worst = nullptr;
  const json* models = read.array(telemetry, "models");
  if (models == nullptr) return worst;
  for (size_t i = 0; i < models->size(); ++i) {
    const json& m = (*models)[i];
    if (!m.is_object()) continue;  // model_names() notes it
    const std::string model = at("models", i);
    const json* latency = read.array(m, "latency", model + ".");
    if (latency == nullptr) continue;
    for (size_t j = 0; j < latency->size(); ++j) {
      const json& l = (*latency)[j];
      const std::string where = model + "." + at("latency", j);
      if (!read.object(l, where)) continue;
      const json stage = read.string(l, "stage", where + ".");
      const json p99 = read.number(l, "p99_us", where + ".");
      const json count = read.number(l, "count", where + ".");
      if (stage != "total" || p99.is_null() || count.is_null() || count.get<double>() <= 0) continue;
      if (worst.is_null() || p99.get<double>() > worst.get<double>()) worst = p99;
    }
  }
  return worst;
}

// Fills `row` from a telemetry object; wrong types are left null and noted in `read`.
void fill_from_telemetry(json& row, const json& telemetry, FieldReader& read) {
  read.boolean(telemetry, "ready");  // not shown (readiness is asked itself) but must be a boolean
  row["device_kind"] = read.string(telemetry, "device_kind");
  row["board"] = read.string(telemetry, "board");
  row["models"] = model_names(telemetry, read);
  row["images_per_second"] = read.number(telemetry, "images_per_second");
  row["power_watts"] = read.number(telemetry, "power_watts");
  row["temperature_c"] = read.number(telemetry, "temperature_c");
  row["queue_depth"] = read.number(telemetry, "queue_depth");
  row["p99_us"] = worst_p99_us(telemetry, read);
  // Per device instance (a peer from before instance groups has none).
  const json* devices = read.array(telemetry, "devices");
  if (devices == nullptr) return;
  for (size_t i = 0; i < devices->size(); ++i) {
    const json& device = (*devices)[i];
    const std::string where = at("devices", i);
    if (!read.object(device, where)) continue;
    const std::string prefix = where + ".";
    row["devices"].push_back({{"index", read.number(device, "index", prefix)},
                              {"state", read.string(device, "state", prefix)},
                              {"images_per_second", read.number(device, "images_per_second", prefix)},
                              {"power_watts", read.number(device, "power_watts", prefix)},
                              {"temperature_c", read.number(device, "temperature_c", prefix)},
                              {"fabric_utilization", read.number(device, "fabric_utilization", prefix)}});
  }
}

// "HTTP 401: missing bearer token" from an error answer ({"error":{"message"}} when it has one).
std::string http_error_text(const ProbeReply& reply) {
  std::string text = "HTTP " + std::to_string(reply.status);
  const json body = json::parse(reply.body, nullptr, false);
  if (!body.is_object()) return text;
  const auto error = body.find("error");
  if (error == body.end() || !error->is_object()) return text;
  const auto message = error->find("message");
  if (message != error->end() && message->is_string()) {
    text += ": " + message->get_ref<const std::string&>().substr(0, kMaxPeerMessageBytes);
  }
  return text;
}

// Whether a /v2/health/ready answer of 200 says ready; a fault in `read` when it is malformed.
bool ready_answer(const ProbeReply& ready, FieldReader& read) {
  const json body = json::parse(ready.body, nullptr, false);
  if (!read.object(body, "the answer")) return false;
  const json said = read.boolean(body, "ready");
  return said.is_boolean() && said.get<bool>();
}

}  // namespace

json worst_p99_us(const json& telemetry) {
  FieldReader read;
  return worst_p99_us(telemetry, read);
}

json peer_row(const std::string& target, const ProbeReply& telemetry, const ProbeReply& ready, bool* bad_answer) {
  json row = empty_row(target);
  bool malformed = false;
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
      FieldReader read;
      fill_from_telemetry(row, body, read);
      if (const std::string faults = read.faults(); !faults.empty()) {
        note("telemetry: " + faults);
        malformed = true;
      }
    } else {
      note("telemetry: bad answer: not a JSON object");
      malformed = true;
    }
  } else {
    note("telemetry: " + (telemetry.status == 0 ? telemetry.error : http_error_text(telemetry)));
  }
  if (ready.status == 200) {
    FieldReader read;
    row["ready"] = ready_answer(ready, read);
    if (const std::string faults = read.faults(); !faults.empty()) {
      note("readiness: " + faults);
      malformed = true;
    }
  } else if (ready.status != 0) {
    // A draining daemon answers 400 "not ready": reachable, not ready, and no fault to report.
    if (ready.status != 400) note("readiness: " + http_error_text(ready));
  } else {
    note("readiness: " + ready.error);
  }
  if (!error.empty()) row["error"] = error;
  if (bad_answer != nullptr) *bad_answer = malformed;
  return row;
}

json self_row(const std::string& target, const json& telemetry, bool ready) {
  json row = empty_row(target);
  row["self"] = true;
  row["reachable"] = true;
  row["ready"] = ready;
  FieldReader read;  // this daemon's own JSON: no faults to show
  fill_from_telemetry(row, telemetry, read);
  return row;
}

}  // namespace tessera::fleet
