// The HTTP API and the web UI: POST /v1/classify, GET /v1/models, GET /v1/telemetry,
// GET /v1/telemetry/stream (server-sent events), GET /v1/fleet (this daemon and its peers),
// GET /metrics, GET /healthz, static files.
// With bearer tokens, every route but health and the static files wants one (routes/http_auth.h).
#pragma once

#include <cstdint>
#include <filesystem>

#include "server/batching/admission.h"
#include "server/http/types.h"
#include "server/telemetry/event_stream_hub.h"

namespace tessera {

class BearerTokens;
class ModelRepository;
namespace telemetry {
class ServerStats;
}  // namespace telemetry
namespace fleet {
class FleetService;
}  // namespace fleet
namespace kserve {
class SharedMemoryRegistry;
}  // namespace kserve

class HttpRoutes final : public HttpHandler {
 public:
  // Without `stats` there is no /metrics nor /v1/telemetry; without `tokens` no route wants one;
  // without `fleet` no /v1/fleet. `admission` is the daemon's, shared with the gRPC doors; its
  // in-flight count also holds the event streams and /v1/fleet. All must outlive the routes.
  HttpRoutes(ModelRepository& models, Admission& admission, std::filesystem::path web_root,
             const telemetry::ServerStats* stats = nullptr, const BearerTokens* tokens = nullptr,
             fleet::FleetService* fleet = nullptr);

  // Inference (/v1/classify, KServe's infer) goes through admission to the queue and answers
  // from the worker's callback; the rest answer inline.
  void handle(HttpRequest request, HttpResponder respond) override;
  // /v1/classify: the connection's limit; a KServe infer: its model's JSON limit; every other
  // route reads no body: kNoBodyRouteLimit.
  uint64_t body_limit(const HttpRequestHeader& header, uint64_t limit) const override;
  // The multiple of a model's input a KServe JSON body may be (kserve::json_body_limits); before
  // the server starts.
  void set_json_body_multiple(uint32_t multiple) { json_body_multiple_ = multiple; }
  // KServe's /v2/systemsharedmemory over these regions (shared with gRPC); before the server starts.
  void set_shared_memory(kserve::SharedMemoryRegistry* shm) { shm_ = shm; }

  // After the admission's in-flight count started draining: ends the open event streams now, not at their next tick.
  void end_event_streams() { event_streams_.wake_all(); }

 private:
  void fleet(const HttpRequest& request, HttpResponder& respond);
  HttpResponse list_models() const;
  HttpResponse static_file(const HttpRequest& request) const;

  ModelRepository& models_;
  const std::filesystem::path web_root_;
  const telemetry::ServerStats* stats_;
  const BearerTokens* tokens_;
  fleet::FleetService* fleet_;
  Admission& admission_;
  EventStreamHub event_streams_;
  uint32_t json_body_multiple_;
  kserve::SharedMemoryRegistry* shm_ = nullptr;
};

}  // namespace tessera
