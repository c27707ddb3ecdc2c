// The protocol's error body: {"error": "<message>"} (its HTTP status is the caller's:
// http_status_for() in server/http/responses.h).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string_view>

#include "accel/common/status.h"

namespace tessera::kserve {

nlohmann::json error_json(std::string_view message);

// The status's message (the code is in the HTTP status).
nlohmann::json error_json(const Status& status);

// error_json() as the ErrorBody of the KServe routes (http/responses.h): the code is in the HTTP
// status, not in the body.
nlohmann::json error_body(std::string_view code, std::string_view message);

}  // namespace tessera::kserve
