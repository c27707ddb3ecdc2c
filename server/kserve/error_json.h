// The protocol's error body: {"error": "<message>"} (its HTTP status is the caller's:
// http_status_for() in server/status_mapping.h).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string_view>

#include "accel/common/status.h"

namespace tessera::kserve {

nlohmann::json error_json(std::string_view message);

// The status's message (the code is in the HTTP status).
nlohmann::json error_json(const Status& status);

}  // namespace tessera::kserve
