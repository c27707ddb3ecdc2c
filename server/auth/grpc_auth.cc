#include "server/auth/grpc_auth.h"

#include <string_view>
#include <vector>

#include "server/auth/grpc_token_credentials.h"

namespace tessera {

std::optional<grpc::Status> check_grpc_bearer(const grpc::CallbackServerContext& context, const BearerTokens* tokens) {
  if (tokens == nullptr) return std::nullopt;
  const auto& metadata = context.client_metadata();
  std::vector<std::string_view> authorizations;
  const auto [begin, end] = metadata.equal_range("authorization");
  for (auto it = begin; it != end; ++it) authorizations.emplace_back(it->second.data(), it->second.size());
  // The same rule as the server-wide check (grpc_token_credentials.h), which runs first.
  const auto refusal = grpc_token_refusal(*tokens, "", authorizations);
  if (!refusal) return std::nullopt;
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, *refusal);
}

}  // namespace tessera
