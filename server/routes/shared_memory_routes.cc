#include "server/routes/shared_memory_routes.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>

#include "server/http/responses.h"
#include "server/http/url.h"
#include "server/kserve/error_json.h"

namespace tessera {

using kserve::error_body;
using kserve::RegionStatus;
using kserve::SharedMemoryRegistry;

namespace http = boost::beast::http;
using nlohmann::json;

namespace {

constexpr size_t kMaxBodyDepth = 4;

// (Not error_response: the KServe routes, a unit with this one in the unity build, have theirs.)
HttpResponse shm_error_response(const Status& status) {
  // Triton answers its ALREADY_EXISTS with 400; a full registry is the client's to empty, not a retry.
  if (status.code() == StatusCode::kAlreadyExists || status.code() == StatusCode::kResourceExhausted) {
    return make_error_response(400, status_code_name(status.code()), status.message(), error_body);
  }
  return make_error_response(status, error_body);
}

// The parsed path: the region's name ("" = every region) and the action.
struct ShmPath {
  std::string name;
  std::string action;
};

// "/status", "/unregister", or "/region/{name}/{action}" after kSharedMemoryPath.
std::optional<ShmPath> parse_path(std::string_view rest) {
  if (rest == "/status" || rest == "/unregister") return ShmPath{"", std::string(rest.substr(1))};
  constexpr std::string_view kRegion = "/region/";
  if (!rest.starts_with(kRegion)) return std::nullopt;
  rest.remove_prefix(kRegion.size());
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0) return std::nullopt;
  auto name = percent_decode(rest.substr(0, slash));
  const std::string_view action = rest.substr(slash + 1);
  if (!name || name->empty() || (action != "status" && action != "unregister" && action != "register")) {
    return std::nullopt;
  }
  return ShmPath{std::move(*name), std::string(action)};
}

// An unsigned integer member of the register body.
Result<uint64_t> body_uint(const json& body, const char* key, bool required) {
  const auto it = body.find(key);
  if (it == body.end()) {
    if (required) return Status::invalid_argument(std::string("request body: '") + key + "' is missing");
    return uint64_t{0};
  }
  if (!it->is_number_unsigned()) {
    return Status::invalid_argument(std::string("request body: '") + key + "' must be an integer >= 0");
  }
  return it->get<uint64_t>();
}

// The register body {"key", "offset", "byte_size"}, nested at most kMaxBodyDepth deep.
Result<RegionStatus> parse_register(const std::string& name, std::string_view text) {
  const json::parser_callback_t bounded = [](int depth, json::parse_event_t /*event*/, json& /*parsed*/) {
    if (static_cast<size_t>(depth) > kMaxBodyDepth) throw std::invalid_argument("nested too deep");
    return true;
  };
  json body;
  try {
    body = json::parse(text, bounded);
  } catch (const std::exception& e) {
    return Status::invalid_argument(std::string("request body: not valid JSON for a register request (") + e.what() +
                                    ")");
  }
  if (!body.is_object()) return Status::invalid_argument("request body: must be a JSON object");
  const auto key = body.find("key");
  if (key == body.end() || !key->is_string()) {
    return Status::invalid_argument("request body: 'key' is missing or not a string");
  }
  RegionStatus region;
  region.name = name;
  region.key = key->get<std::string>();
  TESSERA_ASSIGN_OR_RETURN(region.offset, body_uint(body, "offset", false));
  TESSERA_ASSIGN_OR_RETURN(region.byte_size, body_uint(body, "byte_size", true));
  return region;
}

json status_json(const std::vector<RegionStatus>& regions) {
  json rows = json::array();
  for (const RegionStatus& r : regions) {
    rows.push_back({{"name", r.name}, {"key", r.key}, {"offset", r.offset}, {"byte_size", r.byte_size}});
  }
  return rows;
}

// Register and unregister answer 200 with an empty body, as Triton's.
HttpResponse empty_ok() { return make_text_response(200, "", "application/json"); }

}  // namespace

HttpResponse shared_memory_response(SharedMemoryRegistry& shm, http::verb method, std::string_view path,
                                    std::string_view body) {
  const auto parsed = parse_path(path.substr(std::min(path.size(), kSharedMemoryPath.size())));
  if (!parsed) return shm_error_response(Status::not_found("no such endpoint: " + std::string(path)));
  if (parsed->action == "status") {
    if (!is_get_or_head(method)) return method_not_allowed("GET, HEAD", error_body);
    auto regions = shm.status(parsed->name);
    return regions ? make_json_response(200, status_json(*regions)) : shm_error_response(regions.status());
  }
  if (method != http::verb::post) return method_not_allowed("POST", error_body);
  if (parsed->action == "unregister") {
    const Status status = shm.unregister(parsed->name);
    return status.is_ok() ? empty_ok() : shm_error_response(status);
  }
  auto region = parse_register(parsed->name, body);
  if (!region) return shm_error_response(region.status());
  const Status status = shm.register_region(*region);
  return status.is_ok() ? empty_ok() : shm_error_response(status);
}

}  // namespace tessera
