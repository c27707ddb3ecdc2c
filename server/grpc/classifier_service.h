// The gRPC side: tessera.v1.Classifier on the callback API, and the grpc::Server that hosts it.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "accel/common/status.h"
#include "server/batching/in_flight.h"
#include "server/batching/inference_queue.h"
#include "tessera/v1/classifier.grpc.pb.h"

namespace tessera {

class BearerTokens;
class ModelRepository;

// The answer's wire form: classes, timing, batch size, energy.
void fill_response(const ClassifyResult& result, v1::ClassifyResponse& response);

// Classify validates, hands the job to the queue and returns its reactor at once; the worker's
// callback fills the response and finishes the RPC. ClassifyStream does the same per message of
// a stream (classify_stream.h). ListModels answers inline. With `tokens`, every RPC first wants a
// bearer token (auth/grpc_auth.h).
class ClassifierService final : public v1::Classifier::CallbackService {
 public:
  ClassifierService(const ModelRepository& models, InferenceQueue& queue, int64_t max_image_bytes,
                    const BearerTokens* tokens = nullptr);

  grpc::ServerUnaryReactor* Classify(grpc::CallbackServerContext* context, const v1::ClassifyRequest* request,
                                     v1::ClassifyResponse* response) override;
  grpc::ServerBidiReactor<v1::ClassifyRequest, v1::ClassifyResponse>* ClassifyStream(
      grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* ListModels(grpc::CallbackServerContext* context, const v1::ListModelsRequest* request,
                                       v1::ListModelsResponse* response) override;

  // Classify calls and open streams; shutdown drains them.
  InFlightTracker& in_flight() { return in_flight_; }

  // Checks one request and makes its job (all but `done`); the error is logged. `request_id`
  // is the caller's or a new one, also on error. `request` must outlive the job.
  Result<InferenceJob> prepare_job(grpc::CallbackServerContext* context, const v1::ClassifyRequest& request,
                                   const char* via, std::string& request_id);
  InferenceQueue& queue() { return queue_; }
  // UNAUTHENTICATED when bearer tokens are configured and the call carries no accepted one.
  std::optional<grpc::Status> check_token(const grpc::CallbackServerContext& context) const;

 private:
  const ModelRepository& models_;
  InferenceQueue& queue_;
  const int64_t max_image_bytes_;
  const BearerTokens* tokens_;
  InFlightTracker in_flight_;
};

struct GrpcServerOptions {
  std::string host = "127.0.0.1";
  int port = 50051;                  // 0 picks a free port
  int max_receive_bytes = 16 << 20;  // whole messages, so the image limit plus headroom
  // Full service names grpc.health.v1.Health reports on, besides the server as a whole ("").
  std::vector<std::string> health_services;
  int max_concurrent_streams = 100;                      // per connection (GRPC_ARG_MAX_CONCURRENT_STREAMS)
  std::shared_ptr<grpc::ServerCredentials> credentials;  // null: insecure (plain TCP)
};

// A started grpc::Server serving the given services (which must outlive it).
class GrpcServer {
 public:
  static Result<std::unique_ptr<GrpcServer>> start(const GrpcServerOptions& options,
                                                   const std::vector<grpc::Service*>& services);
  ~GrpcServer();

  // The bound port (the real one when options.port was 0).
  int port() const { return port_; }
  // What grpc.health.v1.Health answers, for the server ("") and every service: SERVING or
  // NOT_SERVING (draining).
  void set_serving(bool serving);
  // Stops accepting calls and waits for running ones, cancelling those still running after
  // `grace`. Idempotent.
  void shutdown(std::chrono::milliseconds grace);

 private:
  GrpcServer(std::unique_ptr<grpc::Server> server, int port, std::vector<std::string> health_services)
      : server_(std::move(server)), port_(port), health_services_(std::move(health_services)) {}

  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::vector<std::string> health_services_;
  bool shut_down_ = false;
};

// "host:port", bracketing IPv6 literals.
std::string join_host_port(const std::string& host, int port);

}  // namespace tessera
