// Bearer tokens (--auth-tokens) against the real daemon: gRPC Classifier and Telemetry answer
// UNAUTHENTICATED and HTTP 401 (with WWW-Authenticate: Bearer) without an accepted token; health
// and the web page stay open; no token ever reaches the log; a bad tokens file stops the start.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <future>
#include <random>

#include <grpcpp/generic/generic_stub.h>

#include <nlohmann/json.hpp>

#include "kserve/grpc_predict_v2.grpc.pb.h"
#include "tessera/v1/telemetry.grpc.pb.h"
#include "tests/integration/daemon_test.h"
#include "tests/integration/fmnist_images.h"
#include "tests/integration/temp_file.h"

namespace tessera::testing {
namespace {

namespace fs = std::filesystem;
namespace http = boost::beast::http;
using nlohmann::json;

constexpr const char* kRightToken = "right-token-8c1f2a";
constexpr const char* kSecondToken = "second-token-77d3e9";
constexpr const char* kWrongToken = "wrong-token-5b0c44";

class AuthTest : public DaemonTest {
 protected:
  std::vector<std::string> extra_args() const override {
    return {"--auth-tokens", tokens_.path.string(), "--log-level", "trace"};
  }

  void SetUp() override {
    DaemonTest::SetUp();
    images_ = load_fmnist_images();
    ASSERT_FALSE(images_.empty()) << "no images in " << TESSERA_FMNIST_DIR;
    image_ = read_binary(images_[0].png);
    channel_ = grpc::CreateChannel(daemon_->grpc_address(), grpc::InsecureChannelCredentials());
  }

  // A Classify call with `authorization` metadata (none when empty).
  grpc::Status classify(const std::string& authorization) {
    grpc::ClientContext context;
    if (!authorization.empty()) context.AddMetadata("authorization", authorization);
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    v1::ClassifyRequest request;
    request.set_image(image_);
    v1::ClassifyResponse response;
    return stub_->Classify(&context, request, &response);
  }

  grpc::Status list_models(const std::string& authorization) {
    grpc::ClientContext context;
    if (!authorization.empty()) context.AddMetadata("authorization", authorization);
    v1::ListModelsResponse response;
    return stub_->ListModels(&context, v1::ListModelsRequest(), &response);
  }

  grpc::Status get_telemetry(const std::string& authorization) {
    grpc::ClientContext context;
    if (!authorization.empty()) context.AddMetadata("authorization", authorization);
    v1::TelemetrySnapshot snapshot;
    return v1::Telemetry::NewStub(channel_)->GetTelemetry(&context, v1::GetTelemetryRequest(), &snapshot);
  }

  // Opens a watch stream: whether a first snapshot came, and how the stream ended.
  std::pair<bool, grpc::Status> watch_telemetry(const std::string& authorization) {
    grpc::ClientContext context;
    if (!authorization.empty()) context.AddMetadata("authorization", authorization);
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    v1::WatchTelemetryRequest request;
    request.set_interval_ms(100);
    request.set_max_snapshots(1);
    auto stub = v1::Telemetry::NewStub(channel_);
    auto reader = stub->WatchTelemetry(&context, request);
    v1::TelemetrySnapshot snapshot;
    const bool got = reader->Read(&snapshot);
    while (reader->Read(&snapshot)) {}
    return {got, reader->Finish()};
  }

  TempFile tokens_{std::string("# tokens of the auth test\n\n") + kRightToken + "\n   " + kSecondToken + "  \n# end\n"};
  std::vector<FmnistImage> images_;
  std::string image_;
  std::shared_ptr<grpc::Channel> channel_;
};

std::string bearer(const std::string& token) { return "Bearer " + token; }

TEST_F(AuthTest, GrpcServicesWantAnAcceptedBearerToken) {
  for (const std::string& authorization : {std::string(), bearer(kWrongToken), std::string("Basic ") + kRightToken,
                                           std::string(kRightToken), bearer("")}) {
    EXPECT_EQ(classify(authorization).error_code(), grpc::StatusCode::UNAUTHENTICATED) << "'" << authorization << "'";
    EXPECT_EQ(list_models(authorization).error_code(), grpc::StatusCode::UNAUTHENTICATED) << authorization;
    EXPECT_EQ(get_telemetry(authorization).error_code(), grpc::StatusCode::UNAUTHENTICATED) << authorization;
    const auto [got, status] = watch_telemetry(authorization);
    EXPECT_FALSE(got);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << authorization;
  }
  for (const std::string& authorization :
       {bearer(kRightToken), bearer(kSecondToken), std::string("bearer ") + kRightToken}) {
    const grpc::Status status = classify(authorization);
    EXPECT_TRUE(status.ok()) << authorization << ": " << status.error_message();
    EXPECT_TRUE(list_models(authorization).ok()) << authorization;
    EXPECT_TRUE(get_telemetry(authorization).ok()) << authorization;
    const auto [got, watch_status] = watch_telemetry(authorization);
    EXPECT_TRUE(got) << authorization;
    EXPECT_TRUE(watch_status.ok()) << watch_status.error_message();
  }
}

// The stream, KServe's metadata and inference want the token; KServe's health RPCs and
// grpc.health.v1 stay open (load balancers and kubelets probe without credentials).
TEST_F(AuthTest, StreamAndKserveWantTheTokenHealthDoesNot) {
  auto stream_status = [&](const std::string& authorization) {
    grpc::ClientContext context;
    if (!authorization.empty()) context.AddMetadata("authorization", authorization);
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    auto stream = stub_->ClassifyStream(&context);
    v1::ClassifyRequest request;
    request.set_image(image_);
    stream->Write(request);
    stream->WritesDone();
    v1::ClassifyResponse response;
    int answers = 0;
    while (stream->Read(&response)) ++answers;
    const grpc::Status status = stream->Finish();
    return std::make_pair(answers, status);
  };
  auto [refused_answers, refused] = stream_status(bearer(kWrongToken));
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(refused_answers, 0);
  auto [answers, accepted] = stream_status(bearer(kRightToken));
  EXPECT_TRUE(accepted.ok()) << accepted.error_message();
  EXPECT_EQ(answers, 1);

  auto kserve = inference::GRPCInferenceService::NewStub(channel_);
  {
    grpc::ClientContext context;
    inference::ServerMetadataResponse metadata;
    EXPECT_EQ(kserve->ServerMetadata(&context, inference::ServerMetadataRequest(), &metadata).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
  }
  {
    grpc::ClientContext context;
    inference::ModelInferRequest request;
    request.set_model_name("fashion-mnist");
    inference::ModelInferResponse response;
    EXPECT_EQ(kserve->ModelInfer(&context, request, &response).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  {
    grpc::ClientContext context;
    context.AddMetadata("authorization", bearer(kRightToken));
    inference::ServerMetadataResponse metadata;
    EXPECT_TRUE(kserve->ServerMetadata(&context, inference::ServerMetadataRequest(), &metadata).ok());
  }
  {
    grpc::ClientContext context;
    inference::ServerReadyResponse ready;
    const grpc::Status status = kserve->ServerReady(&context, inference::ServerReadyRequest(), &ready);
    EXPECT_TRUE(status.ok()) << status.error_message();
    EXPECT_TRUE(ready.ready());
  }
  {
    // grpc.health.v1.Health/Check with an empty request, without a token: SERVING (field 1 = 1).
    grpc::GenericStub generic(channel_);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    grpc::Slice empty{std::string()};  // an empty HealthCheckRequest (a buffer with no slice is invalid)
    grpc::ByteBuffer request(&empty, 1), response;
    std::promise<grpc::Status> done;
    generic.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &response,
                      [&done](grpc::Status st) { done.set_value(std::move(st)); });
    const grpc::Status status = done.get_future().get();
    EXPECT_TRUE(status.ok()) << status.error_message();
    std::vector<grpc::Slice> slices;
    ASSERT_TRUE(response.Dump(&slices).ok());
    std::string bytes;
    for (const auto& slice : slices) bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
    EXPECT_EQ(bytes, std::string("\x08\x01", 2));
  }
}

TEST_F(AuthTest, HttpApiWantsABearerTokenButHealthAndThePageDoNot) {
  struct Route {
    http::verb method;
    std::string target;
  };
  const std::vector<Route> protected_routes = {{http::verb::post, "/v1/classify"},
                                               {http::verb::get, "/v1/models"},
                                               {http::verb::get, "/v1/telemetry"},
                                               {http::verb::get, "/v1/telemetry/stream?max_events=1"},
                                               {http::verb::get, "/metrics"},
                                               {http::verb::get, "/v1/no-such-route"},
                                               {http::verb::get, "/v2/models/fashion-mnist"},
                                               {http::verb::post, "/v2/models/fashion-mnist/infer"},
                                               {http::verb::get, "/v2"},
                                               {http::verb::get, "/v2/health/metadata"}};
  for (const std::string& authorization : {std::string(), bearer(kWrongToken), std::string("Basic ") + kRightToken}) {
    HttpClient client(daemon_->http_port());
    if (!authorization.empty()) client.set_header("authorization", authorization);
    for (const Route& route : protected_routes) {
      const HttpReply reply =
          client.request(route.method, route.target, route.method == http::verb::post ? image_ : "");
      EXPECT_EQ(reply.status, 401) << route.target << " with '" << authorization << "': " << reply.error << reply.body;
      EXPECT_EQ(reply.header("www-authenticate"), "Bearer") << route.target;
      const json body = json::parse(reply.body, nullptr, false);
      EXPECT_EQ(body["error"]["code"], "UNAUTHENTICATED") << route.target << ": " << reply.body;
    }
  }

  HttpClient client(daemon_->http_port());
  client.set_header("authorization", bearer(kRightToken));
  const HttpReply classify_reply = client.post("/v1/classify", image_, "image/png");
  EXPECT_EQ(classify_reply.status, 200) << classify_reply.error << classify_reply.body;
  EXPECT_EQ(client.get("/v1/models").status, 200);
  EXPECT_EQ(client.get("/v1/telemetry").status, 200);
  EXPECT_EQ(client.get("/metrics").status, 200);
  const HttpReply stream = client.get("/v1/telemetry/stream?max_events=1&interval_ms=100");
  EXPECT_EQ(stream.status, 200) << stream.error;
  EXPECT_EQ(stream.body.rfind("data: {", 0), 0u) << stream.body;
  HttpClient second(daemon_->http_port());
  second.set_header("authorization", bearer(kSecondToken));
  EXPECT_EQ(second.get("/v1/models").status, 200);

  // Open without a token: health, the KServe probes, the web page.
  HttpClient open(daemon_->http_port());
  const HttpReply health = open.get("/healthz");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "ok\n");
  const HttpReply page = open.get("/");
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("<title>Tessera</title>"), std::string::npos);
  for (const char* probe : {"/v2/health/live", "/v2/health/ready"}) {
    EXPECT_NE(open.get(probe).status, 401) << probe;
  }
}

TEST_F(AuthTest, TokensNeverReachTheLog) {
  ASSERT_TRUE(classify(bearer(kRightToken)).ok());
  ASSERT_EQ(classify(bearer(kWrongToken)).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  ASSERT_TRUE(classify(bearer(kSecondToken)).ok());
  for (const char* token : {kRightToken, kWrongToken, kSecondToken}) {
    HttpClient client(daemon_->http_port());
    client.set_header("authorization", bearer(token));
    client.post("/v1/classify", image_, "image/png");
    client.post("/v1/classify", "not an image", "image/png");
    client.get("/v1/telemetry/stream?max_events=1&interval_ms=100");
  }
  const auto status = daemon_->stop(SIGTERM);
  ASSERT_TRUE(status.has_value());
  const std::string log = daemon_->log();
  // The log did record the requests (debug and warn lines) ...
  EXPECT_NE(log.find("model=fashion-mnist"), std::string::npos) << log;
  EXPECT_NE(log.find("failed:"), std::string::npos) << log;
  // ... but none of the tokens, right or wrong.
  for (const char* token : {kRightToken, kWrongToken, kSecondToken}) {
    EXPECT_EQ(log.find(token), std::string::npos) << token << " is in the log:\n" << log;
  }
  EXPECT_EQ(log.find("Bearer "), std::string::npos) << log;
}

TEST(AuthStartup, AnEmptyOrMissingTokensFileStopsTheStartNamingIt) {
  TempFile empty("# only a comment\n\n   \n");
  TesseradProcess with_empty({"--auth-tokens", empty.path.string()});
  EXPECT_FALSE(with_empty.ok());
  EXPECT_NE(with_empty.error().find("exited with status 1"), std::string::npos) << with_empty.error();
  EXPECT_NE(with_empty.error().find(empty.path.string() + " has no tokens"), std::string::npos) << with_empty.error();

  const std::string missing = (fs::temp_directory_path() / "tessera-no-such-tokens-file").string();
  TesseradProcess with_missing({"--auth-tokens", missing});
  EXPECT_FALSE(with_missing.ok());
  EXPECT_NE(with_missing.error().find("cannot read the auth tokens file " + missing), std::string::npos)
      << with_missing.error();
}

}  // namespace
}  // namespace tessera::testing
