#include "server/routes/classify_route.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "server/batching/admission.h"
#include "server/batching/classify_result.h"
#include "server/http/multipart.h"
#include "server/http/responses.h"
#include "server/http/url.h"
#include "server/models/model_repository.h"

namespace tessera {
namespace http = boost::beast::http;
using nlohmann::json;

namespace {

json to_json(const ClassifyResult& result, const std::string& model, int64_t version, const std::string& request_id) {
  json classes = json::array();
  for (const ScoredClass& scored : result.classes) {
    classes.push_back({{"index", scored.index}, {"label", scored.label}, {"score", scored.score}});
  }
  return {{"model", model},
          {"model_version", version},
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

// The query's top_k: absent is 0 (the default).
Result<uint64_t> parse_top_k(const std::string& text) {
  uint64_t top_k = 0;
  if (text.empty()) return top_k;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), top_k);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return Status::invalid_argument("top_k must be a non-negative integer, not '" + text + "'");
  }
  return top_k;
}

// The image: the whole body, or the file of a multipart form (a browser's <form>, curl -F).
Result<JobInput> image_input(const HttpRequest& request, std::string_view body) {
  std::string_view image = body;
  if (is_multipart_form(request[http::field::content_type])) {
    auto file = multipart_file(request[http::field::content_type], body);
    if (!file) return file.status();
    image = *file;
  }
  return JobInput{EncodedImage{{reinterpret_cast<const uint8_t*>(image.data()), image.size()}}};
}

void respond_refused(const HttpResponder& respond, const Admitted& refused) {
  HttpResponse res = make_error_response(refused.status());
  res.set("X-Request-Id", refused.request_id());
  respond(std::move(res));
}

}  // namespace

void respond_classify(HttpRequest& request, const HttpResponder& respond, Admission& admission) {
  AdmissionRequest classify;
  classify.via = "http";
  classify.request_id = std::string(request["X-Request-Id"]);
  classify.id_name = "X-Request-Id";
  classify.input_name = "the request body (the image)";
  // The callback owns the body, so the bytes outlive the job.
  auto body = std::make_shared<std::string>(std::move(request.body()));
  classify.bytes = body->size();

  auto params = parse_query(split_target(request.target()).query);
  if (!params)
    return respond_refused(respond, admission.refuse(classify, Status::invalid_argument("malformed query string")));
  classify.model = (*params)["model"];
  classify.top_k = parse_top_k((*params)["top_k"]);
  classify.input = image_input(request, *body);
  Admitted admitted = admission.admit(std::move(classify));
  if (!admitted) return respond_refused(respond, admitted);
  // The answer names the version admission chose, the one the job holds and runs on.
  admitted->done = [respond, body, request_id = admitted.request_id(), model = admitted->model->name(),
                    version = admitted->model->version](Result<ClassifyResult> result) {
    HttpResponse res = result ? make_json_response(200, to_json(*result, model, version, request_id))
                              : make_error_response(result.status());
    res.set("X-Request-Id", request_id);
    respond(std::move(res));
  };
  admission.submit(std::move(admitted));
}

}  // namespace tessera
