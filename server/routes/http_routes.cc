#include "server/routes/http_routes.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <memory>
#include <string>
#include <utility>

#include "server/auth/http_auth.h"
#include "server/batching/classify_result.h"
#include "server/batching/inference_queue.h"
#include "server/batching/request_id.h"
#include "server/batching/request_log.h"
#include "server/fleet/fleet_service.h"
#include "server/http/multipart.h"
#include "server/http/responses.h"
#include "server/http/static_files.h"
#include "server/http/url.h"
#include "server/kserve/kserve_http.h"
#include "server/models/model_repository.h"
#include "server/telemetry/telemetry_events.h"
#include "server/telemetry/telemetry_json.h"

namespace tessera {
namespace http = boost::beast::http;
using nlohmann::json;

namespace {

// Static files larger than this are not served (the UI is a handful of small files).
constexpr int64_t kMaxStaticFileBytes = 8 << 20;

json to_json(const ClassifyResult& result, const std::string& model, const std::string& request_id) {
  json classes = json::array();
  for (const ScoredClass& scored : result.classes) {
    classes.push_back({{"index", scored.index}, {"label", scored.label}, {"score", scored.score}});
  }
  return {{"model", model},
          {"request_id", request_id},
          {"classes", std::move(classes)},
          {"timing",
           {{"decode_us", result.timing.decode_us},
            {"queue_us", result.timing.queue_us},
            {"inference_us", result.timing.inference_us},
            {"total_us", result.timing.total_us},
            {"fabric_us", result.timing.fabric_us},
            {"host_us", result.timing.host_us},
            {"modeled_fabric_us", result.timing.modeled_fabric_us},
            {"batch_size", result.batch_size},
            {"modeled_energy_uj", result.energy_uj}}}};
}

HttpResponse method_not_allowed(std::string_view allow) {
  HttpResponse res = make_error_response(405, "INVALID_ARGUMENT", "method not allowed; use " + std::string(allow));
  res.set(http::field::allow, allow);
  return res;
}

// A HEAD answer: the GET answer's headers, no body.
HttpResponse strip_body(HttpResponse res) {
  const auto length = res.body().size();
  res.body().clear();
  res.content_length(length);
  return res;
}

}  // namespace

HttpRoutes::HttpRoutes(const ModelRepository& models, InferenceQueue& queue, std::filesystem::path web_root,
                       const telemetry::ServerStats* stats, const BearerTokens* tokens, fleet::FleetService* fleet)
    : models_(models), queue_(queue), web_root_(std::move(web_root)), stats_(stats), tokens_(tokens), fleet_(fleet) {}

void HttpRoutes::handle(HttpRequest request, HttpResponder respond) {
  const std::string_view path = split_target(request.target()).path;
  const http::verb method = request.method();
  const bool get = method == http::verb::get || method == http::verb::head;
  auto reply = [&](HttpResponse res) {
    respond(method == http::verb::head ? strip_body(std::move(res)) : std::move(res));
  };
  // The one token check, before any route (those added later included).
  if (auto refused = check_http_bearer(request, path, tokens_)) return reply(std::move(*refused));

  if (path == "/v1/classify") {
    if (method != http::verb::post) return reply(method_not_allowed("POST"));
    return classify(request, respond);
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
    return respond_telemetry_stream(request, respond, *stats_, in_flight_, event_streams_);
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
    return kserve::KserveHttp(models_, queue_, in_flight_).handle(std::move(request), std::move(respond));
  }
  if (path.starts_with("/v1/") || path == "/v1") {
    return reply(make_error_response(Status::not_found("no such endpoint: " + std::string(path))));
  }
  reply(get ? static_file(request) : method_not_allowed("GET, HEAD"));
}

void HttpRoutes::classify(HttpRequest& request, HttpResponder& respond) {
  const auto received = SteadyClock::now();
  std::string request_id = make_request_id();
  const std::string_view given_id = request["X-Request-Id"];
  auto body = std::make_shared<std::string>(std::move(request.body()));
  auto fail = [&](const Status& status, const std::string& model) {
    log_request_failed("http", request_id, model, body->size(), status);
    HttpResponse res = make_error_response(status);
    res.set("X-Request-Id", request_id);
    respond(std::move(res));
  };

  if (!given_id.empty()) {
    if (!is_valid_request_id(given_id)) {
      return fail(Status::invalid_argument("X-Request-Id must be 1..128 printable characters without spaces"), "");
    }
    request_id = std::string(given_id);
  }
  auto params = parse_query(split_target(request.target()).query);
  if (!params) return fail(Status::invalid_argument("malformed query string"), "");
  const std::string model_name = (*params)["model"];
  const ServedModel* model = models_.find(model_name);
  if (model == nullptr) return fail(Status::not_found("no model named '" + model_name + "'"), model_name);

  uint64_t top_k = 0;
  if (const std::string& text = (*params)["top_k"]; !text.empty()) {
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), top_k);
    if (ec != std::errc() || end != text.data() + text.size()) {
      return fail(Status::invalid_argument("top_k must be a non-negative integer, not '" + text + "'"), model->name());
    }
  }
  // The image: the whole body, or the file of a multipart form (a browser's <form>, curl -F).
  std::string_view image(*body);
  if (is_multipart_form(request[http::field::content_type])) {
    auto file = multipart_file(request[http::field::content_type], *body);
    if (!file) return fail(file.status(), model->name());
    image = *file;
  }
  if (image.empty()) return fail(Status::invalid_argument("the request body (the image) is empty"), model->name());

  if (!in_flight_.try_begin()) return fail(Status::unavailable("the server is shutting down"), model->name());

  InferenceJob job;
  job.model = model;
  job.input = EncodedImage{{reinterpret_cast<const uint8_t*>(image.data()), image.size()}};
  job.top_k = effective_top_k(top_k, model->num_classes());
  job.request_id = request_id;
  job.via = "http";
  job.received = received;
  // The callback owns the body, so the bytes outlive the job.
  job.done = [this, respond, body, request_id, model_name = model->name()](Result<ClassifyResult> result) {
    HttpResponse res = result ? make_json_response(200, to_json(*result, model_name, request_id))
                              : make_error_response(result.status());
    res.set("X-Request-Id", request_id);
    respond(std::move(res));
    in_flight_.end();
  };
  queue_.submit(std::move(job));
}

void HttpRoutes::fleet(const HttpRequest& request, HttpResponder& respond) {
  if (!in_flight_.try_begin()) {
    return respond(make_error_response(Status::unavailable("the server is shutting down")));
  }
  const bool head = request.method() == http::verb::head;
  // Answered on the fleet service's thread once every peer answered or timed out.
  fleet_->collect([this, respond, head](json body) {
    HttpResponse res = make_json_response(200, body);
    respond(head ? strip_body(std::move(res)) : std::move(res));
    in_flight_.end();
  });
}

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
         {"device", model->device}});
  }
  return make_json_response(200, {{"models", std::move(models)}, {"default", models_.default_model().name()}});
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
