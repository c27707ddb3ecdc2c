#include "server/routes/kserve_routes.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "server/batching/admission.h"
#include "server/batching/inference_queue.h"
#include "server/http/responses.h"
#include "server/http/url.h"
#include "server/kserve/decode_json.h"
#include "server/kserve/error_json.h"
#include "server/kserve/infer_response.h"
#include "server/kserve/kserve_model.h"
#include "server/kserve/metadata.h"
#include "server/kserve/model_infer.h"
#include "server/kserve/shared_memory_params.h"
#include "server/kserve/statistics.h"
#include "server/kserve/triton_model_config.h"
#include "server/models/model_repository.h"
#include "server/routes/shared_memory_routes.h"

namespace tessera {

using kserve::decode_infer_request_body;
using kserve::error_body;
using kserve::find_model;
using kserve::HttpInferBody;
using kserve::ImageScores;
using kserve::infer_body_limit;
using kserve::infer_response_http;
using kserve::InferSubmitted;
using kserve::json_body_limits;
using kserve::JsonBodyLimits;
using kserve::make_triton_model_config;
using kserve::model_infer;
using kserve::model_metadata_json;
using kserve::model_statistics;
using kserve::ModelInferCall;
using kserve::ModelSignature;
using kserve::PendingInfer;
using kserve::server_metadata_json;
using kserve::server_version;
using kserve::SharedMemoryRegistry;
using kserve::ShmRequest;
using kserve::statistics_json;
using kserve::triton_model_config_json;

namespace http = boost::beast::http;
using nlohmann::json;

namespace {

constexpr const char* kVia = "kserve-http";
constexpr std::string_view kModelsPrefix = "/v2/models/";
constexpr std::string_view kRepositoryPrefix = "/v2/repository/";

HttpResponse error_response(unsigned http_status, std::string_view message) {
  return make_error_response(http_status, "", message, error_body);
}

HttpResponse error_response(const Status& status) { return make_error_response(status, error_body); }

// /v2/models/{model}[/versions/{version}][/{action}], segments percent-decoded.
struct ModelPath {
  std::string model;
  std::string version;
  std::string action;  // "", "ready", "infer", "config" or "stats"
};

std::optional<ModelPath> parse_model_path(std::string_view rest) {
  std::vector<std::string> segments;
  for (;;) {
    const size_t slash = rest.find('/');
    auto segment = percent_decode(rest.substr(0, slash));
    if (!segment || segment->empty()) return std::nullopt;
    segments.push_back(std::move(*segment));
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  ModelPath path;
  path.model = segments[0];
  size_t next = 1;
  if (segments.size() >= 3 && segments[1] == "versions") {
    path.version = segments[2];
    next = 3;
  }
  if (segments.size() == next + 1) {
    path.action = segments[next];
    if (path.action != "ready" && path.action != "infer" && path.action != "config" && path.action != "stats") {
      return std::nullopt;
    }
  } else if (segments.size() != next) {
    return std::nullopt;
  }
  return path;
}

// KServe's model repository extension: POST /v2/repository/index, and POST
// /v2/repository/models/{name}/load or /unload. A load runs in the background: 200 says it
// started; the index says when the model is READY, or why it is UNAVAILABLE.
HttpResponse repository_response(ModelRepository& models, std::string_view rest) {
  if (rest == "index") {
    json rows = json::array();
    for (const ModelIndexEntry& entry : models.index()) {
      json row = {{"name", entry.name}, {"state", entry.state}, {"reason", entry.reason}};
      if (!entry.version.empty()) row["version"] = entry.version;
      rows.push_back(std::move(row));
    }
    return make_json_response(200, rows);
  }
  constexpr std::string_view kModels = "models/";
  const size_t slash = rest.rfind('/');
  if (!rest.starts_with(kModels) || slash == std::string_view::npos || slash <= kModels.size()) {
    return error_response(Status::not_found("no such endpoint: /v2/repository/" + std::string(rest)));
  }
  const auto name = percent_decode(rest.substr(kModels.size(), slash - kModels.size()));
  const std::string_view action = rest.substr(slash + 1);
  if (!name || name->empty() || name->find('/') != std::string::npos || (action != "load" && action != "unload")) {
    return error_response(Status::not_found("no such endpoint: /v2/repository/" + std::string(rest)));
  }
  const Status status = action == "load" ? models.load_model(*name) : models.unload_model(*name);
  if (!status.is_ok()) return error_response(status);
  return make_json_response(200, {{"name", *name}, {"state", action == "load" ? "LOADING" : "UNAVAILABLE"}});
}

// Triton's statistics extension: GET /v2/models[/{m}[/versions/{v}]]/stats.
HttpResponse statistics_response(const ModelRepository& models, std::string_view name, std::string_view version) {
  auto stats = model_statistics(models, name, version);
  return stats ? make_json_response(200, statistics_json(*stats)) : error_response(stats.status());
}

// Triton's model configuration extension: GET /v2/models/{m}[/versions/{v}]/config.
HttpResponse config_response(const ServedModel& model) {
  auto config = triton_model_config_json(make_triton_model_config(model));
  return config ? make_json_response(200, *config) : error_response(config.status());
}

constexpr const char* kHeaderLength = "Inference-Header-Content-Length";

// The answer to an inference: JSON, or with binary outputs the JSON header and their bytes.
HttpResponse infer_answer(const PendingInfer& pending, const ImageScores& scores) {
  HttpInferBody body = infer_response_http(pending.request, pending.model.signature, scores);
  if (!body.binary) return make_text_response(200, std::move(body.body), "application/json");
  HttpResponse res = make_text_response(200, std::move(body.body), "application/octet-stream");
  res.set(kHeaderLength, std::to_string(body.json_length));
  return res;
}

}  // namespace

KserveRoutes::KserveRoutes(ModelRepository& models, Admission& admission, uint32_t json_body_multiple,
                           SharedMemoryRegistry* shm)
    : models_(models), admission_(admission), json_body_multiple_(json_body_multiple), shm_(shm) {}

uint64_t KserveRoutes::body_limit(const ModelRepository& models, const HttpRequestHeader& header, uint64_t limit,
                                  uint32_t json_body_multiple) {
  const std::string_view path = split_target(header.target()).path;
  const auto parsed =
      path.starts_with(kModelsPrefix) ? parse_model_path(path.substr(kModelsPrefix.size())) : std::nullopt;
  if (header.method() != http::verb::post || !parsed || parsed->action != "infer") {
    return std::min(limit, kNoBodyRouteLimit);
  }
  auto model = find_model(models, parsed->model, parsed->version);
  if (!model) return std::min(limit, kNoBodyRouteLimit);
  return std::min(limit, infer_body_limit(model->signature, json_body_multiple));
}

void KserveRoutes::handle(HttpRequest request, HttpResponder respond) {
  const std::string path(split_target(request.target()).path);
  const http::verb method = request.method();
  const bool get = is_get_or_head(method);
  auto reply = [&](HttpResponse res) { respond(answer_to(method, std::move(res))); };
  // KServe's readiness is 200 or a 4xx; the body says why not (draining, or the device).
  const auto not_ready = [this]() -> std::optional<HttpResponse> {
    if (admission_.in_flight().draining()) return error_response(400, "not ready: the server is shutting down");
    if (Status device = models_.device_ready(); !device.is_ok()) {
      return error_response(400, "not ready: " + device.message());
    }
    return std::nullopt;
  };

  if (path == "/v2") {
    return reply(
        get ? make_json_response(200, server_metadata_json(server_version(), shm_ != nullptr && shm_->allowed()))
            : method_not_allowed("GET, HEAD", error_body));
  }
  if (path == "/v2/health/live") {
    return reply(get ? make_json_response(200, {{"live", true}}) : method_not_allowed("GET, HEAD", error_body));
  }
  if (path == "/v2/health/ready") {
    if (!get) return reply(method_not_allowed("GET, HEAD", error_body));
    return reply(not_ready().value_or(make_json_response(200, {{"ready", true}})));
  }
  if (shm_ != nullptr && (path == kSharedMemoryPath || path.starts_with(std::string(kSharedMemoryPath) + "/"))) {
    return reply(shared_memory_response(*shm_, method, path, request.body()));
  }
  if (path.starts_with(kRepositoryPrefix)) {
    if (method != http::verb::post) return reply(method_not_allowed("POST", error_body));
    return reply(repository_response(models_, std::string_view(path).substr(kRepositoryPrefix.size())));
  }
  if (path == "/v2/models/stats") {  // the statistics extension: every model
    if (!get) return reply(method_not_allowed("GET, HEAD", error_body));
    return reply(statistics_response(models_, "", ""));
  }
  const auto parsed = path.starts_with(kModelsPrefix)
                          ? parse_model_path(std::string_view(path).substr(kModelsPrefix.size()))
                          : std::nullopt;
  if (!parsed) return reply(error_response(Status::not_found("no such endpoint: " + path)));

  if (parsed->action == "infer") {
    if (method != http::verb::post) return reply(method_not_allowed("POST", error_body));
    return infer(request, respond, parsed->model, parsed->version);
  }
  if (!get) return reply(method_not_allowed("GET, HEAD", error_body));
  if (parsed->action == "stats") return reply(statistics_response(models_, parsed->model, parsed->version));
  auto model = find_model(models_, parsed->model, parsed->version);
  if (!model) return reply(error_response(model.status()));
  if (parsed->action == "config") return reply(config_response(*model->served));
  if (parsed->action == "ready") {
    return reply(not_ready().value_or(make_json_response(200, {{"name", model->signature.name}, {"ready", true}})));
  }
  reply(make_json_response(200, model_metadata_json(model->signature)));
}

void KserveRoutes::infer(HttpRequest& request, HttpResponder& respond, const std::string& model_name,
                         const std::string& version) {
  AdmissionRequest admission;
  admission.via = kVia;
  admission.model = model_name;
  admission.version = version;
  admission.id_rule = RequestIdRule::kReplace;  // the id is in the body: until it is decoded, a fresh one
  admission.bytes = request.body().size();
  const auto header_length = request.find(kHeaderLength);
  const std::optional<std::string_view> json_length =
      header_length == request.end() ? std::nullopt : std::optional<std::string_view>(header_length->value());
  auto decode = [&request, json_length, multiple = json_body_multiple_](const ModelSignature& model,
                                                                        const DecodeLimits& limits, ShmRequest* shm) {
    const JsonBodyLimits json_limits = json_body_limits(model, multiple);
    return decode_infer_request_body(request.body(), model, limits, &json_limits, json_length, shm);
  };
  // The answer runs after this view is gone: it holds only what lives longer.
  auto answer = [respond](const std::string& request_id, const PendingInfer& pending, Result<ImageScores> scores) {
    HttpResponse res = scores ? infer_answer(pending, *scores) : error_response(scores.status());
    res.set("X-Request-Id", request_id);
    respond(std::move(res));
  };
  const InferSubmitted submitted = model_infer(
      models_, admission_, ModelInferCall{std::move(admission), shm_, std::move(decode), std::move(answer)});
  if (!submitted.status.is_ok()) {
    HttpResponse res = error_response(submitted.status);
    res.set("X-Request-Id", submitted.request_id);
    respond(std::move(res));
  }
}

}  // namespace tessera
