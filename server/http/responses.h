// Building HTTP responses: JSON bodies, and errors as {"error":{"code","message"}}.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <string_view>

#include "accel/common/status.h"
#include "server/http/types.h"

namespace tessera {

HttpResponse make_json_response(unsigned status, const nlohmann::json& body);

HttpResponse make_text_response(unsigned status, std::string body,
                                std::string_view content_type = "text/plain; charset=utf-8");

// Status -> its mapped HTTP status (status_mapping.h); 503 carries Retry-After: 1.
HttpResponse make_error_response(const Status& status);

// An error with an explicit HTTP status (413, 405) and code name.
HttpResponse make_error_response(unsigned http_status, std::string_view code, std::string_view message);

}  // namespace tessera
