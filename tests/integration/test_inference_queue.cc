// The inference queue in-process with the bundled model: refusals are immediate, every job is
// answered exactly once.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>

#include "server/inference_queue.h"
#include "server/model_repository.h"
#include "tests/integration/fmnist_images.h"
#include "tests/integration/tesserad_process.h"

namespace tessera::testing {
namespace {

class InferenceQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto repo = ModelRepository::load(bundled_models_dir());
    ASSERT_TRUE(repo.is_ok()) << repo.status().to_string();
    models_ = std::move(repo).value();
    const auto images = load_fmnist_images();
    ASSERT_FALSE(images.empty());
    image_ = read_binary(images[0].png);
  }

  InferenceJob job(InferenceCallback done) {
    InferenceJob j;
    j.model = &models_->default_model();
    j.image = {reinterpret_cast<const uint8_t*>(image_.data()), image_.size()};
    j.request_id = "test";
    j.done = std::move(done);
    return j;
  }

  std::unique_ptr<ModelRepository> models_;
  std::string image_;
};

TEST_F(InferenceQueueTest, ClassifiesAndReportsTiming) {
  InferenceQueue queue({});
  std::promise<Result<ClassifyResult>> promise;
  queue.submit(job([&](Result<ClassifyResult> r) { promise.set_value(std::move(r)); }));
  auto future = promise.get_future();
  ASSERT_EQ(future.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  auto result = future.get();
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  EXPECT_EQ(result->classes.size(), 5u);
  EXPECT_GE(result->timing.total_us, result->timing.inference_us);
}

TEST_F(InferenceQueueTest, FullQueueRefusesAtOnce) {
  InferenceQueueOptions options;
  options.capacity = 1;
  options.workers = 1;
  InferenceQueue queue(options);

  // The first job's callback holds the only worker until released.
  std::mutex mu;
  std::condition_variable cv;
  bool released = false;
  std::atomic<int> answered{0};
  std::atomic<int> exhausted{0};
  auto count = [&](Result<ClassifyResult> r) {
    if (r.status().code() == StatusCode::kResourceExhausted) ++exhausted;
    ++answered;
  };
  queue.submit(job([&](Result<ClassifyResult> r) {
    std::unique_lock lock(mu);
    cv.wait_for(lock, std::chrono::seconds(20), [&] { return released; });
    count(std::move(r));
  }));
  // At most one job runs and one waits: of these three, at least one is refused, and inline.
  for (int i = 0; i < 3; ++i) {
    const int before = exhausted;
    queue.submit(job(count));
    if (exhausted > before) {
      EXPECT_LE(queue.depth(), 1u);
    }
  }
  EXPECT_GE(exhausted.load(), 1);
  {
    std::lock_guard lock(mu);
    released = true;
  }
  cv.notify_all();
  queue.stop();
  EXPECT_EQ(answered.load(), 4);
}

TEST_F(InferenceQueueTest, StoppedQueueAnswersUnavailable) {
  InferenceQueue queue({});
  queue.stop();
  Status status;
  queue.submit(job([&](Result<ClassifyResult> r) { status = r.status(); }));
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
}

TEST_F(InferenceQueueTest, ExpiredDeadlineIsNotRun) {
  InferenceQueue queue({});
  std::promise<Status> promise;
  InferenceJob j = job([&](Result<ClassifyResult> r) { promise.set_value(r.status()); });
  j.deadline = SteadyClock::now() - std::chrono::seconds(1);
  queue.submit(std::move(j));
  auto future = promise.get_future();
  ASSERT_EQ(future.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  EXPECT_EQ(future.get().code(), StatusCode::kDeadlineExceeded);
}

TEST_F(InferenceQueueTest, BadImageIsInvalidArgument) {
  InferenceQueue queue({});
  const std::string junk = "definitely not an image";
  std::promise<Status> promise;
  InferenceJob j = job([&](Result<ClassifyResult> r) { promise.set_value(r.status()); });
  j.image = {reinterpret_cast<const uint8_t*>(junk.data()), junk.size()};
  queue.submit(std::move(j));
  auto future = promise.get_future();
  ASSERT_EQ(future.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  const Status status = future.get();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(status.message().empty());
}

}  // namespace
}  // namespace tessera::testing
