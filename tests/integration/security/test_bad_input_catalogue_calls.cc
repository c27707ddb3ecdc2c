// The bad-input catalogue (issue 15, point 5), part 2: KServe tensors, unknown models, deadlines,
// cancelled calls, a stream that never reads, bad tokens. Part 1 (test_bad_input_catalogue.cc)
// has images, bodies and the HTTP transport. Each probe gets the answer named in its test, then
// the same daemon must still classify.
//
//   probe                                          answer
//   KServe JSON: not JSON, wrong datatype, wrong   400 naming what is wrong
//     shape, too few elements, bad base64, no
//     inputs, a shape of 10^12 elements
//   KServe gRPC: wrong datatype, shape, contents   INVALID_ARGUMENT
//   unknown model on every door, "../" names       404 / NOT_FOUND
//   1 ms deadlines (a burst, gRPC and KServe)      DEADLINE_EXCEEDED, nothing left behind
//   calls cancelled at once (a burst)              CANCELLED (or OK when the answer won the race)
//   ClassifyStream whose client never reads        others served; the stream ends when cancelled;
//                                                  the daemon still drains and exits 0
//   bad tokens: none, wrong, empty, Basic          UNAUTHENTICATED / 401; the right one is served
//   a 10 KB token                                  RESOURCE_EXHAUSTED (gRPC metadata limit) / 431;
//                                                  gRPC then closes that connection, others are served
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <future>
#include <thread>

#include "tests/integration/kserve_client.h"
#include "tests/integration/security/bad_input_catalogue.h"
#include "tests/integration/temp_file.h"

namespace tessera::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

json tensor_input(json shape, json data, const std::string& datatype = "FP32") {
  return {{"inputs", {{{"name", "input"}, {"datatype", datatype}, {"shape", std::move(shape)}, {"data", data}}}}};
}

// Also: KserveHttpTest.BadRequestsAre400WithAnErrorMessage, KserveGrpcTest.WrongDatatypeOrShapeIsInvalidArgument.
TEST_F(BadInputCatalogue, MalformedKserveTensors) {
  const auto post = [&](const std::string& body) { return http_->post(kFmnistInferPath, body, "application/json"); };
  const std::vector<float> image(28 * 28, 0.5f);
  expect_http(post("{not json"), 400, "JSON");
  expect_http(post(tensor_input({1, 1, 28, 28}, image, "INT64").dump()), 400, "datatype");
  expect_http(post(tensor_input({1, 28, 28, 1}, image).dump()), 400, "shape");
  expect_http(post(tensor_input({1, 1, 28, 28}, std::vector<float>(10, 0.f)).dump()), 400, "elements");
  expect_http(post(tensor_input({1000000, 1000000}, image).dump()), 400, "");
  expect_http(post(tensor_input({-1, 1, 28, 28}, image).dump()), 400, "");
  expect_http(post(tensor_input({1}, {"***not base64***"}, "BYTES").dump()), 400, "base64");
  expect_http(post(json({{"inputs", json::array()}}).dump()), 400, "inputs");
  expect_http(post(json({{"inputs", {{{"name", "x"}}}}}).dump()), 400, "");

  auto kserve = kserve_stub(*daemon_);
  inference::ModelInferRequest wrong = bytes_request(png_);
  wrong.mutable_inputs(0)->set_datatype("FP16");
  EXPECT_EQ(kserve_infer(*kserve, wrong).status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  wrong = bytes_request(png_);
  wrong.mutable_inputs(0)->add_shape(7);
  EXPECT_EQ(kserve_infer(*kserve, wrong).status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  wrong = bytes_request(png_, /*raw=*/true);
  wrong.add_raw_input_contents("second raw buffer for one input");
  EXPECT_EQ(kserve_infer(*kserve, wrong).status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  expect_still_serves();
}

// Also: GrpcTest.UnknownModelIsNotFound, HttpTest.UnknownModelIs404, KserveGrpcTest.UnknownModelOrVersionIsNotFound.
TEST_F(BadInputCatalogue, UnknownModels) {
  for (const std::string& model :
       std::vector<std::string>{"nope", "../fashion-mnist", "fashion-mnist/../caffe", std::string(300, 'm')}) {
    expect_grpc(classify_grpc(*stub_, png_, model), grpc::StatusCode::NOT_FOUND, "no model named");
  }
  expect_http(http_->post("/v1/classify?model=nope", png_, "image/png"), 404, "nope");
  expect_http(http_->post("/v2/models/nope/infer", "{}", "application/json"), 404, "nope");
  expect_http(http_->post("/v2/models/%2e%2e/infer", "{}", "application/json"), 404, "");
  auto kserve = kserve_stub(*daemon_);
  EXPECT_EQ(kserve_infer(*kserve, bytes_request(png_, false, "nope")).status.error_code(), grpc::StatusCode::NOT_FOUND);
  expect_still_serves();
}

// Also: KserveLifecycleTest.DeadlinePassingInTheQueueIsDeadlineExceeded, InferenceQueueTest.ExpiredDeadlineIsNotRun.
TEST_F(BadInputCatalogue, OneMillisecondDeadlines) {
  auto kserve = kserve_stub(*daemon_);
  for (int i = 0; i < 30; ++i) {
    v1::ClassifyRequest request;
    request.set_image(png_);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + 1ms);
    v1::ClassifyResponse response;
    const grpc::Status status = stub_->Classify(&context, request, &response);
    EXPECT_TRUE(status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED || status.ok()) << status.error_message();
    const KserveAnswer answer = kserve_infer(*kserve, bytes_request(png_), 1ms);
    EXPECT_TRUE(answer.status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED || answer.status.ok());
  }
  expect_still_serves();
}

// Also: KserveLifecycleTest.CancelledCallLeavesTheQueueUnrun, InferenceQueueTest.Cancel*.
TEST_F(BadInputCatalogue, CancelledCalls) {
  v1::ClassifyRequest request;
  request.set_image(png_);
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::future<grpc::Status>> calls;
  for (int i = 0; i < 20; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    grpc::ClientContext* context = contexts.back().get();
    context->set_deadline(std::chrono::system_clock::now() + 20s);
    calls.push_back(std::async(std::launch::async, [&, context] {
      v1::ClassifyResponse response;
      return stub_->Classify(context, request, &response);
    }));
    context->TryCancel();
  }
  for (auto& call : calls) {
    ASSERT_EQ(call.wait_for(10s), std::future_status::ready) << "a cancelled call hangs";
    const grpc::Status status = call.get();
    EXPECT_TRUE(status.error_code() == grpc::StatusCode::CANCELLED || status.ok()) << status.error_message();
  }
  expect_still_serves();
}

// A ClassifyStream client that writes and never reads: flow control holds it, nobody else waits
// for it, it ends when cancelled, and the daemon still drains and exits 0.
// Also: ClassifyStreamTest.CancelledStreamEndsAndTheDaemonStopsCleanly.
TEST_F(BadInputCatalogue, StreamThatNeverReads) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 60s);
  auto stream = stub_->ClassifyStream(&context);
  std::atomic<int> written{0};
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    v1::ClassifyRequest request;
    request.set_image(png_);
    while (!stop && written < 5000 && stream->Write(request)) ++written;
  });
  std::this_thread::sleep_for(2s);
  expect_still_serves();
  context.TryCancel();
  stop = true;
  writer.join();
  EXPECT_GT(written.load(), 0);
  v1::ClassifyResponse response;
  while (stream->Read(&response)) {}
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
  expect_still_serves();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(daemon_->stop(SIGTERM), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 15s);
}

// Also: AuthTest.* (every service and route with and without a token).
TEST(BadInputCatalogueTokens, BadTokens) {
  const std::string token = "catalogue-token-3e1d9a";
  TempFile tokens(token + "\n");
  TesseradProcess daemon({"--auth-tokens", tokens.path.string()});
  ASSERT_TRUE(daemon.ok()) << daemon.error();
  const std::string png = read_binary(load_fmnist_images().at(0).png);
  auto stub = daemon.stub();
  const auto classify = [&](const std::string& authorization, v1::Classifier::Stub* on = nullptr) {
    grpc::ClientContext context;
    if (!authorization.empty()) context.AddMetadata("authorization", authorization);
    context.set_deadline(std::chrono::system_clock::now() + 20s);
    v1::ClassifyRequest request;
    request.set_image(png);
    v1::ClassifyResponse response;
    return (on != nullptr ? on : stub.get())->Classify(&context, request, &response);
  };
  for (const std::string& bad : std::vector<std::string>{std::string(), "Bearer wrong", "Bearer ", "Bearer",
                                                         "Basic " + token, "bearer  " + token + " x", token}) {
    EXPECT_EQ(classify(bad).error_code(), grpc::StatusCode::UNAUTHENTICATED) << bad;
    HttpClient http(daemon.http_port());
    if (!bad.empty()) http.set_header("authorization", bad);
    const HttpReply reply = http.post("/v1/classify", png, "image/png");
    EXPECT_EQ(reply.status, 401) << bad << ": " << reply.error << reply.body;
  }
  // A 10 KB token is refused before it is compared: over gRPC's metadata limit, over the HTTP header limit.
  // gRPC closes the connection that carried it (the HPACK state is lost), so it goes on a connection of
  // its own (a local subchannel pool: channels to one address otherwise share one); the client
  // holding `stub` must not notice.
  const std::string huge = "Bearer " + std::string(10 << 10, 'a');
  grpc::ChannelArguments own_connection;
  own_connection.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto huge_stub = v1::Classifier::NewStub(
      grpc::CreateCustomChannel(daemon.grpc_address(), grpc::InsecureChannelCredentials(), own_connection));
  EXPECT_EQ(classify(huge, huge_stub.get()).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  HttpClient huge_http(daemon.http_port());
  huge_http.set_header("authorization", huge);
  EXPECT_EQ(huge_http.post("/v1/classify", png, "image/png").status, 431);
  EXPECT_TRUE(classify("Bearer " + token).ok());
  HttpClient http(daemon.http_port());
  http.set_header("authorization", "Bearer " + token);
  EXPECT_EQ(http.post("/v1/classify", png, "image/png").status, 200);
  EXPECT_EQ(daemon.log().find(token), std::string::npos) << "a token reached the log";
}

}  // namespace
}  // namespace tessera::testing
