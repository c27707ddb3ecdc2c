// The grpc::Server that hosts tesserad's gRPC services, with gRPC health and reflection.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "accel/common/status.h"

namespace tessera {

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
