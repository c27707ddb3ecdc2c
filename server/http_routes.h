// The HTTP API and the web UI: POST /v1/classify, GET /v1/models, GET /v1/telemetry, GET /metrics,
// GET /healthz, static files.
#pragma once

#include <cstdint>
#include <filesystem>

#include "server/http_types.h"
#include "server/in_flight.h"

namespace tessera {

class InferenceQueue;
class ModelRepository;
namespace telemetry {
class ServerStats;
}  // namespace telemetry

class HttpRoutes final : public HttpHandler {
 public:
  // Without `stats` there is no /metrics nor /v1/telemetry.
  HttpRoutes(const ModelRepository& models, InferenceQueue& queue, std::filesystem::path web_root,
             const telemetry::ServerStats* stats = nullptr);

  // Classify hands the body to the queue and answers from the worker's callback; the rest
  // answer inline.
  void handle(HttpRequest request, HttpResponder respond) override;

  // Classify requests waiting for the queue; shutdown drains them.
  InFlightTracker& in_flight() { return in_flight_; }

 private:
  void classify(HttpRequest& request, HttpResponder& respond);
  HttpResponse list_models() const;
  HttpResponse static_file(const HttpRequest& request) const;

  const ModelRepository& models_;
  InferenceQueue& queue_;
  const std::filesystem::path web_root_;
  const telemetry::ServerStats* stats_;
  InFlightTracker in_flight_;
};

}  // namespace tessera
