// The KServe v2 calls the CLI makes, over gRPC (inference.GRPCInferenceService) or HTTP
// (/v2/...): server and model metadata, the repository index, and one blocking inference.
// Errors are gRPC statuses either way (HTTP answers map to the nearest code), so the commands
// report both alike.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>

#include "client/commands/common.h"
#include "client/kserve/kserve_codec.h"
#include "kserve/grpc_predict_v2.grpc.pb.h"

namespace tessera::client::kserve {

// How the HTTP transport lays out tensors (perf_analyzer's --input/--output-tensor-format).
struct HttpTensorFormat {
  bool binary_input = true;   // Triton's binary tensor data extension for the input
  bool binary_output = true;  // ask for the classification output as binary data
};

class KserveTransport {
 public:
  virtual ~KserveTransport() = default;
  // ServerMetadata: the server's name ("tesserad", "triton").
  virtual grpc::Status server_name(std::string& name) = 0;
  // The first model the repository index lists as READY.
  virtual grpc::Status first_ready_model(std::string& model) = 0;
  virtual grpc::Status model_metadata(const std::string& model, const std::string& version,
                                      inference::ModelMetadataResponse& metadata) = 0;
  virtual grpc::Status infer(const InferSpec& spec, std::chrono::microseconds timeout, InferAnswer& answer) = 0;
};

std::unique_ptr<KserveTransport> make_grpc_transport(const Connection& connection,
                                                     std::shared_ptr<grpc::Channel> channel);
// `connection.server` is HOST:PORT.
std::unique_ptr<KserveTransport> make_http_transport(const Connection& connection, HttpTensorFormat format);

// The gRPC code nearest to an HTTP status (400 INVALID_ARGUMENT, 404 NOT_FOUND, 503 UNAVAILABLE...).
grpc::StatusCode code_of_http_status(unsigned status);

// "HOST:PORT" -> HOST and PORT; false when there is no port.
bool split_host_port(const std::string& address, std::string& host, std::string& port);

}  // namespace tessera::client::kserve
