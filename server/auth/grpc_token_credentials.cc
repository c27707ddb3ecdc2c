#include "server/auth/grpc_token_credentials.h"

#include <grpc/grpc.h>

#include <array>
#include <utility>

namespace tessera {
namespace {

// Methods any client may call: health, and KServe's server liveness and readiness.
constexpr std::array<std::string_view, 2> kOpenMethods = {"/inference.GRPCInferenceService/ServerLive",
                                                          "/inference.GRPCInferenceService/ServerReady"};
constexpr std::string_view kHealthService = "/grpc.health.v1.Health/";

std::string_view view_of(const grpc_slice& slice) {
  return {reinterpret_cast<const char*>(GRPC_SLICE_START_PTR(slice)), GRPC_SLICE_LENGTH(slice)};
}

// The processor's state: the tokens, owned (gRPC core destroys it with the credentials).
struct TokenCheck {
  BearerTokens tokens;

  // gRPC core's call: runs on its thread for each call's initial metadata; answers at once.
  static void process(void* state, grpc_auth_context* /*context*/, const grpc_metadata* md, size_t num_md,
                      grpc_process_auth_metadata_done_cb done, void* user_data) {
    std::string_view path;
    std::vector<std::string_view> authorizations;
    for (size_t i = 0; i < num_md; ++i) {
      const std::string_view key = view_of(md[i].key);
      if (key == ":path") path = view_of(md[i].value);
      if (key == "authorization") authorizations.push_back(view_of(md[i].value));
    }
    const auto refusal = grpc_token_refusal(static_cast<TokenCheck*>(state)->tokens, path, authorizations);
    if (!refusal) return done(user_data, nullptr, 0, nullptr, 0, GRPC_STATUS_OK, nullptr);
    done(user_data, nullptr, 0, nullptr, 0, GRPC_STATUS_UNAUTHENTICATED, refusal->c_str());
  }
  static void destroy(void* state) { delete static_cast<TokenCheck*>(state); }
};

// A grpc::ServerCredentials over core credentials (see the header for why).
class CoreServerCredentials final : public grpc::ServerCredentials {
 public:
  explicit CoreServerCredentials(grpc_server_credentials* core) : core_(core) {}
  ~CoreServerCredentials() override { grpc_server_credentials_release(core_); }
  CoreServerCredentials(const CoreServerCredentials&) = delete;
  CoreServerCredentials& operator=(const CoreServerCredentials&) = delete;

  // The check is set on the core credentials (token_checked_credentials); a C++ processor is not
  // taken, so no second mechanism can sneak in.
  void SetAuthMetadataProcessor(const std::shared_ptr<grpc::AuthMetadataProcessor>& /*processor*/) override {}

 private:
  int AddPortToServer(const std::string& addr, grpc_server* server) override {
    return grpc_server_add_http2_port(server, addr.c_str(), core_);
  }

  grpc_server_credentials* core_;
};

}  // namespace

bool grpc_method_needs_token(std::string_view path) {
  if (path.starts_with(kHealthService)) return false;
  for (std::string_view open : kOpenMethods) {
    if (path == open) return false;
  }
  return true;
}

std::optional<std::string> grpc_token_refusal(const BearerTokens& tokens, std::string_view path,
                                              const std::vector<std::string_view>& authorizations) {
  if (!path.empty() && !grpc_method_needs_token(path)) return std::nullopt;
  if (authorizations.empty()) return "missing bearer token (metadata 'authorization: Bearer <token>')";
  if (authorizations.size() > 1) {
    return "more than one 'authorization' metadata entry (" + std::to_string(authorizations.size()) +
           "): send exactly one 'authorization: Bearer <token>'";
  }
  if (!tokens.accepts_header(authorizations.front())) return "the bearer token is not accepted";
  return std::nullopt;
}

std::shared_ptr<grpc::ServerCredentials> token_checked_credentials(grpc_server_credentials* transport,
                                                                   const BearerTokens* tokens) {
  if (tokens != nullptr) {
    grpc_server_credentials_set_auth_metadata_processor(
        transport, {&TokenCheck::process, &TokenCheck::destroy, new TokenCheck{*tokens}});
  }
  return std::make_shared<CoreServerCredentials>(transport);
}

}  // namespace tessera
