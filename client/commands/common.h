// What the client's commands share: the gRPC channel, error names, JSON conversions.
#pragma once

#include <grpcpp/grpcpp.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>

#include "tessera/v1/classifier.grpc.pb.h"

namespace tessera::client {

// Default daemon address.
inline constexpr const char* kDefaultServer = "127.0.0.1:50051";

// A stub for `server` ("HOST:PORT"); connects lazily.
std::unique_ptr<v1::Classifier::Stub> make_stub(const std::string& server);

// "INVALID_ARGUMENT"
const char* grpc_code_name(grpc::StatusCode code);

// The same JSON shapes as tesserad's HTTP API.
nlohmann::json to_json(const v1::ClassifyResponse& response);
nlohmann::json to_json(const v1::ModelInfo& model);
nlohmann::json error_json(const grpc::Status& status);

}  // namespace tessera::client
