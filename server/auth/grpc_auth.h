// The bearer-token check inside the gRPC services: each RPC of tessera.v1 and KServe calls it
// first. The daemon checks every call before any service sees it (grpc_token_credentials.h);
// this is the same rule for a service run on a server without that check (embedding, tests).
#pragma once

#include <grpcpp/grpcpp.h>

#include <optional>

#include "server/auth/bearer_tokens.h"

namespace tessera {

// nullopt when the call may go on (no tokens configured, or its "authorization" metadata is
// "Bearer <accepted token>"); otherwise the UNAUTHENTICATED status to finish it with.
std::optional<grpc::Status> check_grpc_bearer(const grpc::CallbackServerContext& context, const BearerTokens* tokens);

}  // namespace tessera
