#include "server/routes/http_routes.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "server/batching/inference_queue.h"
#include "server/fleet/fleet_service.h"
#include "server/http/responses.h"
#include "server/http/static_files.h"
#include "server/http/url.h"
#include "server/kserve/decode_json.h"
#include "server/metrics/exposition.h"
#include "server/models/model_repository.h"
#include "server/routes/classify_route.h"
#include "server/routes/http_auth.h"
#include "server/routes/kserve_routes.h"
#include "server/routes/telemetry_routes.h"
#include "server/telemetry/telemetry_json.h"

namespace tessera {
namespace http = boost::beast::http;
using nlohmann::json;

namespace {

// Static files larger than this are not served (the UI is a handful of small files).
constexpr int64_t kMaxStaticFileBytes = 8 << 20;

}  // namespace

HttpRoutes::HttpRoutes(ModelRepository& models, Admission& admission, std::filesystem::path web_root,
                       const telemetry::ServerStats* stats, const BearerTokens* tokens, fleet::FleetService* fleet)
    : models_(models),
      web_root_(std::move(web_root)),
      stats_(stats),
      tokens_(tokens),
      fleet_(fleet),
      admission_(admission),
      json_body_multiple_(kserve::kDefaultJsonBodyMultiple) {}

uint64_t HttpRoutes::body_limit(const HttpRequestHeader& header, uint64_t limit) const {
  const std::string_view path = split_target(header.target()).path;
  if (path == "/v1/classify") return limit;
  if (path.starts_with("/v2/")) return KserveRoutes::body_limit(models_, header, limit, json_body_multiple_);
  return std::min(limit, kNoBodyRouteLimit);
}

void HttpRoutes::handle(HttpRequest request, HttpResponder respond) {
  const std::string_view path = split_target(request.target()).path;
  const http::verb method = request.method();
  const bool get = is_get_or_head(method);
  auto reply = [&](HttpResponse res) { respond(answer_to(method, std::move(res))); };
  // The one token check, before any route (those added later included).
  if (auto refused = check_http_bearer(request, path, tokens_)) return reply(std::move(*refused));

  if (path == "/v1/classify") {
    if (method != http::verb::post) return reply(method_not_allowed("POST"));
    return respond_classify(request, respond, admission_);
  }
  if (path == "/v1/models") {
    return reply(get ? list_models() : method_not_allowed("GET, HEAD"));
  }
  if (path == "/metrics" && stats_) {
    if (!get) return reply(method_not_allowed("GET, HEAD"));
    return reply(make_text_response(200, stats_->expose_metrics(), std::string(metrics::kContentType)));
  }
  if (path == "/v1/telemetry/stream" && stats_) {
    if (method != http::verb::get) return reply(method_not_allowed("GET"));
    return respond_telemetry_stream(request, respond, *stats_, admission_.in_flight(), event_streams_);
  }
  if (path == "/v1/telemetry" && stats_) {
    if (!get) return reply(method_not_allowed("GET, HEAD"));
    return reply(make_json_response(200, telemetry::to_json(stats_->snapshot())));
  }
  if (path == "/v1/fleet" && fleet_) {
    if (!get) return reply(method_not_allowed("GET, HEAD"));
    return fleet(request, respond);
  }
  if (path == "/healthz") {
    return reply(get ? make_text_response(200, "ok\n") : method_not_allowed("GET, HEAD"));
  }
  if (path.starts_with("/v2/") || path == "/v2") {
    return KserveRoutes(models_, admission_, json_body_multiple_, shm_).handle(std::move(request), std::move(respond));
  }
  if (path.starts_with("/v1/") || path == "/v1") {
    return reply(make_error_response(Status::not_found("no such endpoint: " + std::string(path))));
  }
  reply(get ? static_file(request) : method_not_allowed("GET, HEAD"));
}

void HttpRoutes::fleet(const HttpRequest& request, HttpResponder& respond) {
  if (!admission_.in_flight().try_begin()) {
    return respond(make_error_response(Status::unavailable("the server is shutting down")));
  }
  // Answered on the fleet service's thread once every peer answered or timed out.
  fleet_->collect([this, respond, method = request.method()](const json& body) {
    respond(answer_to(method, make_json_response(200, body)));
    admission_.in_flight().end();
  });
}

namespace {

// Where an int8 model's multiply-adds run (null for fp32): the web page's models table shows it.
json placement_json(const plan::Placement* placement) {
  if (placement == nullptr) return nullptr;
  return {{"fabric_mac_share", placement->fabric_mac_share()},
          {"fabric_segments", placement->fabric_segments},
          {"handovers", placement->handovers},
          {"summary", placement->line()}};
}

}  // namespace

HttpResponse HttpRoutes::list_models() const {
  json models = json::array();
  for (const auto& model : models_.models()) {
    const ModelConfig& config = model->config();
    models.push_back(
        {{"name", config.name},
         {"format", config.format},
         {"input",
          {{"width", config.input.width}, {"height", config.input.height}, {"channels", config.input.channels}}},
         {"labels", config.labels},
         {"precision", model->precision},
         {"device", model->device},
         {"version", model->version},
         {"devices", model->devices},
         {"placement", placement_json(model->engine->placement())}});
  }
  // Every model of the repository folder with its load state (the web UI's models page).
  json index = json::array();
  for (const ModelIndexEntry& row : models_.index()) {
    index.push_back({{"name", row.name}, {"version", row.version}, {"state", row.state}, {"reason", row.reason}});
  }
  return make_json_response(
      200, {{"models", std::move(models)}, {"default", models_.default_name()}, {"repository", std::move(index)}});
}

HttpResponse HttpRoutes::static_file(const HttpRequest& request) const {
  auto file = resolve_static_file(web_root_, split_target(request.target()).path);
  if (!file) {
    // Escapes and misses look the same from outside.
    return make_error_response(Status::not_found("no such page: " + std::string(split_target(request.target()).path)));
  }
  auto data = read_whole_file(*file, kMaxStaticFileBytes);
  if (!data) return make_error_response(Status::internal(data.status().message()));
  HttpResponse res = make_text_response(200, std::move(data).value(), content_type_for(*file));
  res.set(http::field::cache_control, "no-cache");
  return res;
}

}  // namespace tessera
