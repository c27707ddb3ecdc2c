// The bearer-token check of every gRPC call, done once for the whole server in gRPC core's
// server auth filter (an auth metadata processor on the listening port's credentials), before
// any service sees the call: tessera.v1, KServe, server reflection and whatever is registered
// later. Open without a token: grpc.health.v1.Health and KServe's ServerLive/ServerReady (like
// HTTP's /v2/health/live and /v2/health/ready).
//
// gRPC 1.51's C++ InsecureServerCredentials refuses a processor (it asserts), and its server
// interceptors cannot finish a call with a status; core credentials, plain or TLS, take one, so
// the port is added with core credentials wrapped in a grpc::ServerCredentials of our own.
#pragma once

#include <grpc/grpc_security.h>
#include <grpcpp/security/server_credentials.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/auth/bearer_tokens.h"

namespace tessera {

// Whether a call to `path` ("/package.Service/Method") needs a token when tokens are configured.
bool grpc_method_needs_token(std::string_view path);

// Why a call to `path` whose "authorization" metadata entries are `authorizations` is refused
// (the UNAUTHENTICATED message), or nullopt when it may go on. Two or more entries are refused,
// whatever they hold: which one counts would be the reader's choice.
std::optional<std::string> grpc_token_refusal(const BearerTokens& tokens, std::string_view path,
                                              const std::vector<std::string_view>& authorizations);

// Credentials that add the port with `transport` (core credentials, insecure or TLS; this takes
// its reference) and, when `tokens` is given, check every call against a copy of them.
std::shared_ptr<grpc::ServerCredentials> token_checked_credentials(grpc_server_credentials* transport,
                                                                   const BearerTokens* tokens);

}  // namespace tessera
