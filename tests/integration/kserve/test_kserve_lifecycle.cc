// KServe v2 under load and shutdown, on a copy of the bundled model with slow batches (a batch's
// first request waits for company): a full queue (RESOURCE_EXHAUSTED / 503 + Retry-After), a
// deadline that passes in the queue, a cancelled call, and draining (readiness false, running calls finish, new
// ones refused).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <future>
#include <thread>

#include "tests/integration/daemon_test.h"
#include "tests/integration/fmnist_images.h"
#include "tests/integration/kserve_client.h"

namespace tessera::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// The first request of a batch waits this long for company.
constexpr int kQueueDelayUs = 2'000'000;

class KserveLifecycleTest : public ::testing::Test {
 protected:
  // Debug logs: answered requests are logged too.
  void start(int max_queue) {
    models_ = std::make_unique<ModelsCopy>(8, kQueueDelayUs, max_queue);
    daemon_ = std::make_unique<TesseradProcess>(std::vector<std::string>{"--log-level", "debug"}, models_->path());
    ASSERT_TRUE(daemon_->ok()) << daemon_->error();
    stub_ = kserve_stub(*daemon_);
    const auto images = load_fmnist_images();
    ASSERT_FALSE(images.empty()) << "no images in " << TESSERA_FMNIST_DIR;
    png_ = read_binary(images[0].png);
  }

  void TearDown() override {
    if (HasFailure() && daemon_) std::cerr << "---- tesserad log ----\n" << daemon_->log() << "----\n";
  }

  // A ModelInfer running on its own thread (it waits in the queue for kQueueDelayUs).
  std::future<KserveAnswer> infer_async() {
    return std::async(std::launch::async, [this] { return kserve_infer(*stub_, bytes_request(png_)); });
  }

  std::unique_ptr<ModelsCopy> models_;
  std::unique_ptr<TesseradProcess> daemon_;
  std::unique_ptr<inference::GRPCInferenceService::Stub> stub_;
  std::string png_;
};

TEST_F(KserveLifecycleTest, FullQueueIsResourceExhaustedAnd503) {
  start(1);
  std::future<KserveAnswer> waiting = infer_async();
  std::this_thread::sleep_for(300ms);  // it is queued, waiting for company

  const auto refused_at = std::chrono::steady_clock::now();
  const KserveAnswer refused = kserve_infer(*stub_, bytes_request(png_));
  EXPECT_EQ(refused.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << refused.status.error_message();
  EXPECT_LT(std::chrono::steady_clock::now() - refused_at, 1s) << "a full queue must refuse at once";

  HttpClient client(daemon_->http_port());
  json body = {{"inputs", {{{"name", "image"}, {"datatype", "BYTES"}, {"shape", {1}}, {"data", {base64(png_)}}}}}};
  const HttpReply reply = client.post("/v2/models/fashion-mnist/infer", body.dump(), "application/json");
  EXPECT_EQ(reply.status, 503) << reply.body;
  EXPECT_EQ(reply.header("retry-after"), "1");
  const json error = json::parse(reply.body, nullptr, false);
  ASSERT_TRUE(error.is_object()) << reply.body;
  EXPECT_TRUE(error["error"].is_string()) << reply.body;

  ASSERT_EQ(waiting.wait_for(15s), std::future_status::ready);
  const KserveAnswer first = waiting.get();
  EXPECT_TRUE(first.status.ok()) << first.status.error_message();
  EXPECT_EQ(output_floats(first.response).size(), 10u);
}

TEST_F(KserveLifecycleTest, DeadlinePassingInTheQueueIsDeadlineExceeded) {
  start(16);
  const auto sent = std::chrono::steady_clock::now();
  const KserveAnswer answer = kserve_infer(*stub_, bytes_request(png_), 300ms);
  EXPECT_EQ(answer.status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << answer.status.error_message();
  EXPECT_LT(std::chrono::steady_clock::now() - sent, 1500ms);
  // The server dropped it from the queue at its deadline (not after the batch delay) and said so.
  bool logged = false;
  for (int i = 0; i < 20 && !logged; ++i) {
    const std::string log = daemon_->log();
    logged = log.find("kserve-grpc") != std::string::npos && log.find("deadline passed") != std::string::npos;
    if (!logged) std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(logged) << daemon_->log();
}

TEST_F(KserveLifecycleTest, CancelledCallLeavesTheQueueUnrun) {
  start(16);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 20s);
  inference::ModelInferResponse response;
  std::future<grpc::Status> call =
      std::async(std::launch::async, [&] { return stub_->ModelInfer(&context, bytes_request(png_), &response); });
  std::this_thread::sleep_for(300ms);  // queued, waiting for company
  context.TryCancel();
  ASSERT_EQ(call.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(call.get().error_code(), grpc::StatusCode::CANCELLED);
  // The server answers it CANCELLED when its batch would close, without running the model.
  bool logged = false;
  for (int i = 0; i < 50 && !logged; ++i) {
    const std::string log = daemon_->log();
    logged = log.find("kserve-grpc") != std::string::npos && log.find("CANCELLED") != std::string::npos;
    if (!logged) std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(logged) << daemon_->log();
  EXPECT_EQ(daemon_->log().find("top1="), std::string::npos) << "the cancelled call ran";
  // The daemon still answers (and would log the answer).
  const KserveAnswer after = kserve_infer(*stub_, bytes_request(png_));
  EXPECT_TRUE(after.status.ok()) << after.status.error_message();
  for (int i = 0; i < 20 && daemon_->log().find("top1=") == std::string::npos; ++i) std::this_thread::sleep_for(100ms);
  EXPECT_NE(daemon_->log().find("top1="), std::string::npos) << daemon_->log();
}

TEST_F(KserveLifecycleTest, DrainingIsNotReadyFinishesRunningCallsRefusesNewOnes) {
  start(16);
  HttpClient client(daemon_->http_port());  // connected before the drain
  ASSERT_EQ(client.get("/v2/health/ready").status, 200);
  std::future<KserveAnswer> running = infer_async();
  std::this_thread::sleep_for(300ms);

  std::future<std::optional<int>> exited = std::async(std::launch::async, [this] { return daemon_->stop(SIGTERM); });
  std::this_thread::sleep_for(300ms);  // the daemon drains: the queued call waits for its batch

  grpc::ClientContext ready_context;
  inference::ServerReadyResponse ready;
  const grpc::Status ready_status = stub_->ServerReady(&ready_context, {}, &ready);
  ASSERT_TRUE(ready_status.ok()) << ready_status.error_message();
  EXPECT_FALSE(ready.ready());
  grpc::ClientContext model_context;
  inference::ModelReadyRequest model_request;
  model_request.set_name(kFmnistModel);
  inference::ModelReadyResponse model_ready;
  ASSERT_TRUE(stub_->ModelReady(&model_context, model_request, &model_ready).ok());
  EXPECT_FALSE(model_ready.ready());
  const HttpReply http_ready = client.get("/v2/health/ready");
  EXPECT_EQ(http_ready.status, 400) << http_ready.error << http_ready.body;

  const KserveAnswer refused = kserve_infer(*stub_, bytes_request(png_));
  EXPECT_EQ(refused.status.error_code(), grpc::StatusCode::UNAVAILABLE) << refused.status.error_message();

  ASSERT_EQ(running.wait_for(15s), std::future_status::ready);
  const KserveAnswer finished = running.get();
  EXPECT_TRUE(finished.status.ok()) << finished.status.error_message();
  EXPECT_EQ(output_floats(finished.response).size(), 10u);
  ASSERT_EQ(exited.wait_for(25s), std::future_status::ready);
  const std::optional<int> status = exited.get();
  ASSERT_TRUE(status.has_value()) << "tesserad did not exit after SIGTERM";
  EXPECT_EQ(*status, 0);
}

}  // namespace
}  // namespace tessera::testing
