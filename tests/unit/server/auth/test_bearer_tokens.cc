// BearerTokens and the HTTP path rule: the tokens file format, the Authorization header forms
// accepted, and which paths want a token.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "server/auth/bearer_tokens.h"
#include "server/routes/http_auth.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

fs::path write_temp(const std::string& name, const std::string& text) {
  fs::path path = fs::temp_directory_path() / ("tessera-" + std::to_string(getpid()) + "-" + name);
  std::ofstream(path) << text;
  return path;
}

TEST(BearerTokens, LoadsOneTokenPerLineSkippingBlanksAndComments) {
  const fs::path file = write_temp("tokens", "# admin\n\n  alpha-123 \r\n\t#beta\nbeta-456\n");
  auto tokens = BearerTokens::load(file);
  fs::remove(file);
  ASSERT_TRUE(tokens.is_ok()) << tokens.status().to_string();
  EXPECT_EQ(tokens->size(), 2u);
  EXPECT_TRUE(tokens->accepts_token("alpha-123"));
  EXPECT_TRUE(tokens->accepts_token("beta-456"));
  EXPECT_FALSE(tokens->accepts_token("#beta"));
  EXPECT_FALSE(tokens->accepts_token("alpha-12"));
  EXPECT_FALSE(tokens->accepts_token("alpha-1234"));
  EXPECT_FALSE(tokens->accepts_token(""));
}

TEST(BearerTokens, EmptyMissingAndMalformedFilesAreErrorsThatNeverShowAToken) {
  const fs::path empty = write_temp("empty", "# nothing\n\n");
  auto none = BearerTokens::load(empty);
  ASSERT_FALSE(none.is_ok());
  EXPECT_NE(none.status().message().find(empty.string()), std::string::npos) << none.status().message();
  fs::remove(empty);

  auto missing = BearerTokens::load("/nonexistent/tessera-tokens");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/tessera-tokens"), std::string::npos);

  const fs::path spaced = write_temp("spaced", "good-token\nsecret with-space\n");
  auto bad = BearerTokens::load(spaced);
  fs::remove(spaced);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("line 2"), std::string::npos) << bad.status().message();
  EXPECT_EQ(bad.status().message().find("secret"), std::string::npos) << bad.status().message();
}

TEST(BearerTokens, AcceptsOnlyTheBearerSchemeWithAKnownToken) {
  const BearerTokens tokens = BearerTokens::of({"t0k3n"});
  EXPECT_TRUE(tokens.accepts_header("Bearer t0k3n"));
  EXPECT_TRUE(tokens.accepts_header("bearer t0k3n"));
  EXPECT_TRUE(tokens.accepts_header("  BEARER   t0k3n  "));
  EXPECT_FALSE(tokens.accepts_header("Bearer t0k3"));
  EXPECT_FALSE(tokens.accepts_header("Bearert0k3n"));
  EXPECT_FALSE(tokens.accepts_header("Basic t0k3n"));
  EXPECT_FALSE(tokens.accepts_header("t0k3n"));
  EXPECT_FALSE(tokens.accepts_header("Bearer "));
  EXPECT_FALSE(tokens.accepts_header(""));
  EXPECT_EQ(bearer_token_of("Bearer abc"), "abc");
  EXPECT_EQ(bearer_token_of("Token abc"), "");
}

TEST(HttpAuth, InferenceTelemetryAndMetricsWantATokenHealthAndPagesDoNot) {
  for (const char* path : {"/v1/classify", "/v1/models", "/v1/telemetry", "/v1/telemetry/stream", "/metrics", "/v1",
                           "/v1/anything", "/v2", "/v2/models/m/infer", "/v2/health/metadata", "/v2/"}) {
    EXPECT_TRUE(http_path_needs_token(path)) << path;
  }
  for (const char* path :
       {"/healthz", "/v2/health/live", "/v2/health/ready", "/", "/index.html", "/app.js", "/v1x", "/metricsx"}) {
    EXPECT_FALSE(http_path_needs_token(path)) << path;
  }
}

}  // namespace
}  // namespace tessera
