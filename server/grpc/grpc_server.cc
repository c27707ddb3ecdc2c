#include "server/grpc/grpc_server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>

#include <utility>

namespace tessera {

std::string join_host_port(const std::string& host, int port) {
  if (host.find(':') != std::string::npos && host.front() != '[') {
    return "[" + host + "]:" + std::to_string(port);
  }
  return host + ":" + std::to_string(port);
}

Result<std::unique_ptr<GrpcServer>> GrpcServer::start(const GrpcServerOptions& options,
                                                      const std::vector<grpc::Service*>& services) {
  const std::string address = join_host_port(options.host, options.port);
  // grpc.health.v1.Health (SERVING until drain) and server reflection (grpcurl, Postman, ...):
  // both process-wide switches read when the builder builds.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int bound_port = 0;
  builder.AddListeningPort(address, options.credentials ? options.credentials : grpc::InsecureServerCredentials(),
                           &bound_port);
  builder.SetMaxReceiveMessageSize(options.max_receive_bytes);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, options.max_concurrent_streams);
  // Without this a second daemon on the same port would silently share it (SO_REUSEPORT).
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  for (grpc::Service* service : services) builder.RegisterService(service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || bound_port == 0) {
    return Status::unavailable("gRPC cannot listen on " + address + " (is the port in use?)");
  }
  std::unique_ptr<GrpcServer> grpc_server(new GrpcServer(std::move(server), bound_port, options.health_services));
  grpc_server->set_serving(true);
  return grpc_server;
}

void GrpcServer::set_serving(bool serving) {
  if (grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService()) {
    for (const std::string& name : health_services_) health->SetServingStatus(name, serving);
    health->SetServingStatus(serving);
  }
}

GrpcServer::~GrpcServer() { shutdown(std::chrono::milliseconds(0)); }

void GrpcServer::shutdown(std::chrono::milliseconds grace) {
  if (shut_down_) return;
  shut_down_ = true;
  server_->Shutdown(std::chrono::system_clock::now() + grace);
  server_->Wait();
}

}  // namespace tessera
