// tessera.v1's unary Classify on the async API's own queues (server/grpc/classify_unary.h), on a
// copy of the bundled model whose batch's first request waits 2 s for company: calls queued
// past the door's two threads all wait together and leave as one batch; a full queue refuses at
// once; a deadline or a cancel that comes while a call is queued ends it unrun; a drain finishes
// the queued call, refuses new ones and exits cleanly (the door's queues shut only once the last
// call is finished).
#include <gtest/gtest.h>

#include <future>
#include <thread>
#include <vector>

#include "tests/integration/daemon_test.h"
#include "tests/integration/fmnist_images.h"
#include "tests/integration/kserve_client.h"

namespace tessera::testing {
namespace {

using namespace std::chrono_literals;

// The first request of a batch waits this long for company.
constexpr int kQueueDelayUs = 2'000'000;

class ClassifyUnaryDoorTest : public ::testing::Test {
 protected:
  void start(int max_batch, int max_queue) {
    models_ = std::make_unique<ModelsCopy>(max_batch, kQueueDelayUs, max_queue);
    daemon_ = std::make_unique<TesseradProcess>(std::vector<std::string>{"--log-level", "debug"}, models_->path());
    ASSERT_TRUE(daemon_->ok()) << daemon_->error();
    stub_ = daemon_->stub();
    const auto images = load_fmnist_images();
    ASSERT_FALSE(images.empty()) << "no images in " << TESSERA_FMNIST_DIR;
    png_ = read_binary(images[0].png);
  }

  void TearDown() override {
    if (HasFailure() && daemon_) std::cerr << "---- tesserad log ----\n" << daemon_->log() << "----\n";
  }

  // A Classify on its own thread (it waits in the queue for its batch).
  std::future<GrpcAnswer> classify_async(const std::string& request_id = "") {
    return std::async(std::launch::async,
                      [this, request_id] { return classify_grpc(*stub_, png_, "", 1, request_id); });
  }

  // Waits up to 5 s for `text` in the daemon's log.
  bool log_shows(const std::string& text) {
    for (int i = 0; i < 50; ++i) {
      if (daemon_->log().find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(100ms);
    }
    return false;
  }

  std::unique_ptr<ModelsCopy> models_;
  std::unique_ptr<TesseradProcess> daemon_;
  std::unique_ptr<v1::Classifier::Stub> stub_;
  std::string png_;
};

TEST_F(ClassifyUnaryDoorTest, MoreCallsThanThreadsWaitTogetherAndLeaveAsOneBatch) {
  start(6, 16);
  std::vector<std::future<GrpcAnswer>> calls;
  calls.reserve(6);
  for (int i = 0; i < 6; ++i) calls.push_back(classify_async("door-" + std::to_string(i)));
  for (int i = 0; i < 6; ++i) {
    ASSERT_EQ(calls[static_cast<size_t>(i)].wait_for(15s), std::future_status::ready);
    const GrpcAnswer a = calls[static_cast<size_t>(i)].get();
    ASSERT_TRUE(a.status.ok()) << a.status.error_message();
    EXPECT_EQ(a.response.request_id(), "door-" + std::to_string(i));
    // Full at 6: it left before the 2 s delay, so no handler held a door thread meanwhile.
    EXPECT_EQ(a.response.timing().batch_size(), 6u);
    EXPECT_FALSE(a.top1().empty());
  }
}

TEST_F(ClassifyUnaryDoorTest, FullQueueIsRefusedAtOnce) {
  start(8, 1);
  std::future<GrpcAnswer> waiting = classify_async();
  std::this_thread::sleep_for(300ms);  // queued, waiting for company
  const auto refused_at = std::chrono::steady_clock::now();
  const GrpcAnswer refused = classify_grpc(*stub_, png_);
  EXPECT_EQ(refused.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << refused.status.error_message();
  EXPECT_LT(std::chrono::steady_clock::now() - refused_at, 1s) << "a full queue must refuse at once";
  ASSERT_EQ(waiting.wait_for(15s), std::future_status::ready);
  const GrpcAnswer first = waiting.get();
  EXPECT_TRUE(first.status.ok()) << first.status.error_message();
}

TEST_F(ClassifyUnaryDoorTest, DeadlinePassingInTheQueueIsDeadlineExceeded) {
  start(8, 16);
  v1::ClassifyRequest request;
  request.set_image(png_);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 300ms);
  v1::ClassifyResponse response;
  const auto sent = std::chrono::steady_clock::now();
  const grpc::Status status = stub_->Classify(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << status.error_message();
  EXPECT_LT(std::chrono::steady_clock::now() - sent, 1500ms);
  // The server dropped it at its deadline (not after the batch delay) and said so.
  EXPECT_TRUE(log_shows("deadline passed")) << daemon_->log();
}

TEST_F(ClassifyUnaryDoorTest, CancelledCallLeavesTheQueueUnrun) {
  start(8, 16);
  v1::ClassifyRequest request;
  request.set_image(png_);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 20s);
  v1::ClassifyResponse response;
  std::future<grpc::Status> call =
      std::async(std::launch::async, [&] { return stub_->Classify(&context, request, &response); });
  std::this_thread::sleep_for(300ms);  // queued, waiting for company
  context.TryCancel();
  ASSERT_EQ(call.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(call.get().error_code(), grpc::StatusCode::CANCELLED);
  // The server learns of the cancel and answers the job CANCELLED without running the model.
  EXPECT_TRUE(log_shows("CANCELLED")) << daemon_->log();
  EXPECT_EQ(daemon_->log().find("top1="), std::string::npos) << "the cancelled call ran";
  const GrpcAnswer after = classify_grpc(*stub_, png_);
  EXPECT_TRUE(after.status.ok()) << after.status.error_message();
}

TEST_F(ClassifyUnaryDoorTest, DrainFinishesTheQueuedCallRefusesNewOnesAndExits) {
  start(8, 16);
  std::future<GrpcAnswer> running = classify_async("queued");
  std::this_thread::sleep_for(300ms);
  std::future<std::optional<int>> exited = std::async(std::launch::async, [this] { return daemon_->stop(SIGTERM); });
  std::this_thread::sleep_for(300ms);  // draining: the queued call waits for its batch
  const GrpcAnswer refused = classify_grpc(*stub_, png_);
  EXPECT_EQ(refused.status.error_code(), grpc::StatusCode::UNAVAILABLE) << refused.status.error_message();
  ASSERT_EQ(running.wait_for(15s), std::future_status::ready);
  const GrpcAnswer finished = running.get();
  EXPECT_TRUE(finished.status.ok()) << finished.status.error_message();
  EXPECT_EQ(finished.response.request_id(), "queued");
  ASSERT_EQ(exited.wait_for(25s), std::future_status::ready);
  const std::optional<int> status = exited.get();
  ASSERT_TRUE(status.has_value()) << "tesserad did not exit after SIGTERM";
  EXPECT_EQ(*status, 0);
}

}  // namespace
}  // namespace tessera::testing
