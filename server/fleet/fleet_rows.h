// The rows of GET /v1/fleet: one per daemon, built from what its /v1/telemetry and
// /v2/health/ready said (or from this daemon's own snapshot). A daemon that cannot be asked is a
// row with reachable = false and the reason, never an error of the endpoint.
//
// A row: {target, self, reachable, ready, device_kind, board, models: [names], images_per_second,
// power_watts, temperature_c, queue_depth, p99_us, error}; figures a daemon did not give are null.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "server/fleet/http_probe.h"

namespace tessera::fleet {

// A peer's row from its two answers. Nothing a peer sends makes it throw: a field of the wrong
// type is left null and named in the row's error ("telemetry: bad answer: ready must be a
// boolean"), and *bad_answer (when given) says whether an answer was malformed so.
nlohmann::json peer_row(const std::string& target, const ProbeReply& telemetry, const ProbeReply& ready,
                        bool* bad_answer = nullptr);

// This daemon's row from its own telemetry JSON (telemetry_json.h).
nlohmann::json self_row(const std::string& target, const nlohmann::json& telemetry, bool ready);

// The slowest model's p99 of the "total" stage over the telemetry window, null without answers.
nlohmann::json worst_p99_us(const nlohmann::json& telemetry);

}  // namespace tessera::fleet
