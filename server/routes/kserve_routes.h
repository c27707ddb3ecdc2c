// The KServe v2 / Open Inference Protocol over HTTP/REST: every path under /v2.
//   GET  /v2                                          server metadata
//   GET  /v2/health/live, /v2/health/ready            200, or 400 when not ready (draining)
//   GET  /v2/models/{m}[/versions/{v}]                model metadata
//   GET  /v2/models/{m}[/versions/{v}]/ready          200, 400 when draining, 404 unknown model
//   POST /v2/models/{m}[/versions/{v}]/infer          inference (JSON body, or JSON + binary
//                                                      tensor data; decode_json.h)
//   /v2/systemsharedmemory/...                        system shared memory (shared_memory_routes.h)
// Errors are {"error": "<message>"} with the status of http_status_for() in http/responses.h (a
// full queue: 503 with Retry-After). HEAD is answered like GET without the body. An infer body
// may be at most the model's limit (decode_json.h, infer_body_limit with
// --kserve-json-body-multiple: the JSON's bound plus a max batch of binary FP32 inputs); the other
// routes read no body and take at most kNoBodyRouteLimit. With binary outputs the answer is
// application/octet-stream with Inference-Header-Content-Length, as Triton sends it.
#pragma once

#include <cstdint>
#include <string>

#include "server/http/types.h"

namespace tessera {
class Admission;
class ModelRepository;

namespace kserve {
class SharedMemoryRegistry;
}  // namespace kserve

// The body limit of routes that do not read their body.
inline constexpr uint64_t kNoBodyRouteLimit = 64 << 10;

// A view over the daemon's parts; cheap to make per request. Inference requests go through
// `admission`, the HTTP routes' (whose in-flight tracker shutdown drains; readiness reads it).
class KserveRoutes {
 public:
  // `json_body_multiple`: json_body_limits' multiple for infer bodies. `shm`: the system
  // shared-memory regions, shared with gRPC; null: /v2/systemsharedmemory is 404.
  KserveRoutes(ModelRepository& models, Admission& admission, uint32_t json_body_multiple,
               kserve::SharedMemoryRegistry* shm = nullptr);

  // HttpHandler::body_limit for a request under /v2, at most `limit`: an infer request's model's
  // infer_body_limit (an unknown model's: kNoBodyRouteLimit; the answer is 404 anyway).
  static uint64_t body_limit(const ModelRepository& models, const HttpRequestHeader& header, uint64_t limit,
                             uint32_t json_body_multiple);

  // Answers a request whose path is /v2 or under /v2/: inline, or for inference from the queue's
  // callback.
  void handle(HttpRequest request, HttpResponder respond);

 private:
  void infer(HttpRequest& request, HttpResponder& respond, const std::string& model_name, const std::string& version);

  ModelRepository& models_;
  Admission& admission_;
  const uint32_t json_body_multiple_;
  kserve::SharedMemoryRegistry* shm_;
};

}  // namespace tessera
