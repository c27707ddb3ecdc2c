// The JSON form of a telemetry snapshot (GET /v1/telemetry and each server-sent event of
// /v1/telemetry/stream); field names as in tessera.v1.TelemetrySnapshot.
#pragma once

#include <nlohmann/json.hpp>

#include "server/telemetry/server_stats.h"

namespace tessera::telemetry {

nlohmann::json to_json(const TelemetrySnapshot& s);

}  // namespace tessera::telemetry
