// The gRPC token check every call goes through (grpc_token_credentials.h) and HTTP's refusal of
// two Authorization headers: which methods are open, and what a call with no, a wrong, one or
// two authorization entries is told.
#include <gtest/gtest.h>

#include "server/auth/grpc_token_credentials.h"
#include "server/routes/http_auth.h"

namespace tessera {
namespace {

namespace http = boost::beast::http;

TEST(GrpcTokenDoors, OnlyHealthAndKserveServerHealthAreOpen) {
  for (const char* path :
       {"/grpc.health.v1.Health/Check", "/grpc.health.v1.Health/Watch", "/inference.GRPCInferenceService/ServerLive",
        "/inference.GRPCInferenceService/ServerReady"}) {
    EXPECT_FALSE(grpc_method_needs_token(path)) << path;
  }
  for (const char* path :
       {"/inference.GRPCInferenceService/ModelReady", "/tessera.v1.Classifier/Classify",
        "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", "/tessera.v1.Telemetry/WatchTelemetry",
        "/grpc.health.v1.Healthx/Check", "/inference.GRPCInferenceService/ServerLiveX", "", "/"}) {
    EXPECT_TRUE(grpc_method_needs_token(path)) << path;
  }
}

TEST(GrpcTokenDoors, OneAcceptedAuthorizationEntryAndNoOtherPasses) {
  const BearerTokens tokens = BearerTokens::of({"t0k3n"});
  const std::string_view path = "/tessera.v1.Classifier/ListModels";
  EXPECT_EQ(grpc_token_refusal(tokens, path, {"Bearer t0k3n"}), std::nullopt);
  EXPECT_NE(grpc_token_refusal(tokens, path, {})->find("missing bearer token"), std::string::npos);
  EXPECT_EQ(grpc_token_refusal(tokens, path, {"Bearer wrong"}), "the bearer token is not accepted");
  for (const auto& twice : {std::vector<std::string_view>{"Bearer t0k3n", "Bearer t0k3n"},
                            {"Bearer wrong", "Bearer t0k3n"},
                            {"Bearer t0k3n", "Bearer wrong"}}) {
    const auto refusal = grpc_token_refusal(tokens, path, twice);
    ASSERT_TRUE(refusal.has_value());
    EXPECT_NE(refusal->find("more than one 'authorization' metadata entry (2)"), std::string::npos) << *refusal;
  }
  // Health answers whatever is sent; a call without a path is no open method.
  EXPECT_EQ(grpc_token_refusal(tokens, "/grpc.health.v1.Health/Check", {}), std::nullopt);
  EXPECT_NE(grpc_token_refusal(tokens, "", {}), std::nullopt);
}

TEST(HttpAuth, TwoAuthorizationHeadersAreRefusedWhateverTheyHold) {
  const BearerTokens tokens = BearerTokens::of({"t0k3n"});
  HttpRequest one{http::verb::get, "/v1/models", 11};
  one.insert(http::field::authorization, "Bearer t0k3n");
  EXPECT_FALSE(check_http_bearer(one, "/v1/models", &tokens).has_value());
  HttpRequest two = one;
  two.insert(http::field::authorization, "Bearer t0k3n");
  const auto refused = check_http_bearer(two, "/v1/models", &tokens);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->result_int(), 401u);
  EXPECT_NE(refused->body().find("more than one Authorization header (2)"), std::string::npos) << refused->body();
}

}  // namespace
}  // namespace tessera
