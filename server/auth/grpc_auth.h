// The bearer-token check of the gRPC services: each RPC of tessera.v1.Classifier and
// tessera.v1.Telemetry (and any service that wants it) calls it first. grpc.health.v1 does not.
#pragma once

#include <grpcpp/grpcpp.h>

#include <optional>

#include "server/auth/bearer_tokens.h"

namespace tessera {

// nullopt when the call may go on (no tokens configured, or its "authorization" metadata is
// "Bearer <accepted token>"); otherwise the UNAUTHENTICATED status to finish it with.
std::optional<grpc::Status> check_grpc_bearer(const grpc::CallbackServerContext& context, const BearerTokens* tokens);

}  // namespace tessera
