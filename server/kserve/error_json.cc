#include "server/kserve/error_json.h"

#include <nlohmann/json.hpp>

namespace tessera::kserve {

nlohmann::json error_json(std::string_view message) { return {{"error", message}}; }

nlohmann::json error_json(const Status& status) { return error_json(status.message()); }

nlohmann::json error_body(std::string_view /*code*/, std::string_view message) { return error_json(message); }

}  // namespace tessera::kserve
