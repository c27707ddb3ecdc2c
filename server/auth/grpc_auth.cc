#include "server/auth/grpc_auth.h"

#include <string_view>

namespace tessera {

std::optional<grpc::Status> check_grpc_bearer(const grpc::CallbackServerContext& context, const BearerTokens* tokens) {
  if (tokens == nullptr) return std::nullopt;
  const auto& metadata = context.client_metadata();
  // Several "authorization" entries: any accepted one will do.
  const auto [begin, end] = metadata.equal_range("authorization");
  for (auto it = begin; it != end; ++it) {
    if (tokens->accepts_header(std::string_view(it->second.data(), it->second.size()))) return std::nullopt;
  }
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                      begin == end ? "missing bearer token (metadata 'authorization: Bearer <token>')"
                                   : "the bearer token is not accepted");
}

}  // namespace tessera
