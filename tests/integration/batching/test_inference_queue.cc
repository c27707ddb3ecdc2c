// The dynamic batcher in-process with the bundled model (fp32 engine): batches close at
// max_batch or after max_queue_delay, refusals are immediate, expired and cancelled jobs leave
// the queue before the model, every job is answered exactly once; inputs arrive ready from
// admission's input stage, which decodes them before the batch forms.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "accel/image/preprocess.h"
#include "server/batching/admission.h"
#include "server/batching/inference_queue.h"
#include "server/batching/input_stage.h"
#include "server/models/model_repository.h"
#include "tests/integration/batching/queued_job.h"
#include "tests/integration/fmnist_images.h"
#include "tests/integration/tesserad_process.h"

namespace tessera::testing {
namespace {

class InferenceQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    use_policy({});
    const auto images = load_fmnist_images();
    ASSERT_FALSE(images.empty());
    image_ = read_binary(images[0].png);
  }

  // The bundled model (fp32) under a given batching policy.
  void use_policy(BatchPolicy policy) {
    auto config = load_model_config(bundled_models_dir() / "fashion-mnist");
    ASSERT_TRUE(config.is_ok()) << config.status().to_string();
    auto engine = Engine::load(*config);
    ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
    auto model = std::make_unique<ServedModel>();
    model->engine = std::move(engine).value();
    model->batching = policy;
    model->precision = "fp32";
    model->device = "host";
    std::vector<std::unique_ptr<ServedModel>> models;
    models.push_back(std::move(model));
    models_ = std::make_unique<ModelRepository>(std::move(models));
  }

  // Submits a job whose result lands in the returned future.
  std::future<Result<ClassifyResult>> submit(InferenceQueue& queue, uint64_t* ticket = nullptr,
                                             SteadyClock::time_point deadline = SteadyClock::time_point::max()) {
    InferenceJob j = job({});
    j.deadline = deadline;
    return submit_for_answer(queue, std::move(j), ticket);
  }

  static Result<ClassifyResult> wait(std::future<Result<ClassifyResult>>& f) { return wait_answer(f); }

  InferenceJob job(InferenceCallback done) {
    InferenceJob j;
    j.model = models_->default_model();
    j.input = EncodedImage{{reinterpret_cast<const uint8_t*>(image_.data()), image_.size()}};
    j.request_id = "test";
    j.done = std::move(done);
    EXPECT_TRUE(stage_.prepare(j).is_ok()) << "as admission's input stage would, before the queue";
    return j;
  }

  InputStage stage_{DecodeLimits{}};

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
  use_policy({.max_batch = 1, .max_queue_delay_us = 0, .max_queue = 1});
  InferenceQueueOptions options;
  options.workers = 1;
  options.run_inline_when_idle = false;  // the first job must be a worker's, not this thread's
  InferenceQueue queue(options);

  // The first job's callback holds the only worker until released.
  std::mutex mu;
  std::condition_variable cv;
  bool released = false;
  std::atomic<int> answered{0};
  std::atomic<int> exhausted{0};
  auto count = [&](const Result<ClassifyResult>& r) {
    if (r.status().code() == StatusCode::kResourceExhausted) ++exhausted;
    ++answered;
  };
  queue.submit(job([&](const Result<ClassifyResult>& r) {
    std::unique_lock lock(mu);
    cv.wait_for(lock, std::chrono::seconds(20), [&] { return released; });
    count(r);
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
  queue.submit(job([&](const Result<ClassifyResult>& r) { status = r.status(); }));
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
}

TEST_F(InferenceQueueTest, ExpiredDeadlineIsNotRun) {
  InferenceQueue queue({});
  std::promise<Status> promise;
  InferenceJob j = job([&](const Result<ClassifyResult>& r) { promise.set_value(r.status()); });
  j.deadline = SteadyClock::now() - std::chrono::seconds(1);
  queue.submit(std::move(j));
  auto future = promise.get_future();
  ASSERT_EQ(future.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  EXPECT_EQ(future.get().code(), StatusCode::kDeadlineExceeded);
}

TEST_F(InferenceQueueTest, BadImageIsRefusedBeforeTheQueue) {
  // The input stage refuses an image that does not decode, and leaves nothing that passes for a
  // ready input: the queue answers such a job INTERNAL rather than run it.
  InferenceQueue queue({});
  const std::string junk = "definitely not an image";
  Status answered = Status::ok();
  InferenceJob j = job([&](const Result<ClassifyResult>& r) { answered = r.status(); });
  j.input = EncodedImage{{reinterpret_cast<const uint8_t*>(junk.data()), junk.size()}};
  const Status bad = stage_.prepare(j);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(bad.message().empty());
  EXPECT_EQ(queue.submit(std::move(j)), 0u);
  EXPECT_EQ(answered.code(), StatusCode::kInternal) << answered.to_string();
}

// Images are decoded by admission's input stage as they are submitted, on the submitter's thread,
// not by the batch: while a batch of 8 still waits for company (a 30 s delay), its images are
// already decoded, and a corrupt one is answered before submit() returns without holding up the
// others.
TEST_F(InferenceQueueTest, ImagesAreDecodedBeforeTheBatchForms) {
  use_policy({.max_batch = 8, .max_queue_delay_us = 30'000'000, .max_queue = 64});
  InFlightTracker in_flight;  // outlives the queue, which answers what is left when it stops
  InferenceQueue queue({});
  Admission admission(*models_, queue, in_flight, DecodeLimits{});
  auto submit_image = [&](const std::string& bytes, InferenceCallback done) -> uint64_t {
    AdmissionRequest request;
    request.via = "test";
    request.input = JobInput{EncodedImage{{reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}}};
    Admitted admitted = admission.admit(std::move(request));
    EXPECT_TRUE(admitted) << admitted.status().to_string();
    if (!admitted) return 0;
    admitted->done = std::move(done);
    return admission.submit(std::move(admitted));
  };
  const std::string junk = "definitely not an image";
  Status corrupt = Status::internal("not answered");
  EXPECT_EQ(submit_image(junk, [&](const Result<ClassifyResult>& r) { corrupt = r.status(); }), 0u)
      << "answered at once, never queued";
  EXPECT_EQ(corrupt.code(), StatusCode::kInvalidArgument) << corrupt.to_string();
  EXPECT_EQ(queue.depth(), 0u);

  std::vector<std::future<Result<ClassifyResult>>> futures;
  auto submit_good = [&] {
    auto promise = std::make_shared<std::promise<Result<ClassifyResult>>>();
    futures.push_back(promise->get_future());
    submit_image(image_, [promise](Result<ClassifyResult> r) { promise->set_value(std::move(r)); });
  };
  for (int i = 0; i < 7; ++i) submit_good();
  EXPECT_EQ(queue.depth(), 7u) << "no batch has formed yet";
  EXPECT_EQ(admission.input_stage().prepared(), 8u) << "yet every image submitted is decoded";
  submit_good();  // the eighth closes the batch
  for (auto& f : futures) {
    auto r = wait(f);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ(r->batch_size, 8u) << "the corrupt image failed alone";
  }
  EXPECT_TRUE(in_flight.wait_until_idle(SteadyClock::now() + std::chrono::seconds(5)));
}

TEST_F(InferenceQueueTest, FullBatchClosesAtMaxBatch) {
  use_policy({.max_batch = 8, .max_queue_delay_us = 30'000'000, .max_queue = 64});
  InferenceQueue queue({});
  std::vector<std::future<Result<ClassifyResult>>> futures;
  futures.reserve(8);
  for (int i = 0; i < 8; ++i) futures.push_back(submit(queue));
  for (auto& f : futures) {
    auto r = wait(f);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ(r->batch_size, 8u);
    EXPECT_EQ(r->probabilities.size(), 10u);
  }
}

// Fewer jobs than max_batch wait for the delay, then go together.
TEST_F(InferenceQueueTest, PartialBatchClosesAfterTheQueueDelay) {
  use_policy({.max_batch = 8, .max_queue_delay_us = 300'000, .max_queue = 64});
  InferenceQueue queue({});
  std::vector<std::future<Result<ClassifyResult>>> futures;
  futures.reserve(3);
  for (int i = 0; i < 3; ++i) futures.push_back(submit(queue));
  for (auto& f : futures) {
    auto r = wait(f);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ(r->batch_size, 3u);
    EXPECT_GE(r->timing.queue_us, 250'000u) << "the first job waited for company";
  }
}

TEST_F(InferenceQueueTest, CancelTakesAQueuedJobOutAtOnce) {
  use_policy({.max_batch = 8, .max_queue_delay_us = 30'000'000, .max_queue = 64});
  InferenceQueue queue({});
  uint64_t ticket = 0;
  auto f = submit(queue, &ticket);
  ASSERT_NE(ticket, 0u);
  EXPECT_EQ(queue.depth(), 1u);
  EXPECT_TRUE(queue.cancel(ticket));
  auto r = wait(f);
  EXPECT_EQ(r.status().code(), StatusCode::kCancelled);
  EXPECT_EQ(queue.depth(), 0u);
  EXPECT_FALSE(queue.cancel(ticket)) << "answered once only";
}

// A job whose caller went away is dropped when the batch forms, not run.
TEST_F(InferenceQueueTest, CancelledCallerIsDroppedBeforeTheModel) {
  use_policy({.max_batch = 2, .max_queue_delay_us = 30'000'000, .max_queue = 64});
  InferenceQueue queue({});
  std::atomic<bool> gone{false};
  auto promise = std::make_shared<std::promise<Result<ClassifyResult>>>();
  InferenceJob j = job([promise](Result<ClassifyResult> r) { promise->set_value(std::move(r)); });
  j.cancelled = [&gone] { return gone.load(); };
  queue.submit(std::move(j));
  gone = true;
  auto second = submit(queue);  // wakes the batcher
  auto first = promise->get_future();
  EXPECT_EQ(wait(first).status().code(), StatusCode::kCancelled);
  queue.stop();  // the second job is answered by the drain
  auto r = wait(second);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->batch_size, 1u);
}

// A deadline shorter than the queue delay is answered at the deadline, not at the delay.
TEST_F(InferenceQueueTest, DeadlineWhileWaitingForABatchIsAnsweredAtTheDeadline) {
  use_policy({.max_batch = 8, .max_queue_delay_us = 30'000'000, .max_queue = 64});
  InferenceQueue queue({});
  const auto start = SteadyClock::now();
  auto f = submit(queue, nullptr, start + std::chrono::milliseconds(200));
  auto r = wait(f);
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_LT(SteadyClock::now() - start, std::chrono::seconds(20));
}

// stop() answers every queued job without waiting for the delay.
TEST_F(InferenceQueueTest, StopDrainsEveryQueuedJob) {
  use_policy({.max_batch = 8, .max_queue_delay_us = 30'000'000, .max_queue = 64});
  InferenceQueue queue({});
  std::vector<std::future<Result<ClassifyResult>>> futures;
  futures.reserve(5);
  for (int i = 0; i < 5; ++i) futures.push_back(submit(queue));
  queue.stop();
  for (auto& f : futures) {
    ASSERT_EQ(f.wait_for(std::chrono::seconds(0)), std::future_status::ready) << "stop() returned before answering";
    auto r = f.get();
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  }
}

// A pre-decoded input (the model's tensor, or pixels to preprocess) classifies like the encoded
// image it came from; a tensor of the wrong size is refused.
TEST_F(InferenceQueueTest, DecodedInputsClassifyLikeTheImage) {
  InferenceQueue queue({});
  const ServedModel& model = *models_->default_model();
  auto decoded = decode_image({reinterpret_cast<const uint8_t*>(image_.data()), image_.size()}, 1);
  ASSERT_TRUE(decoded.is_ok()) << decoded.status().to_string();
  auto tensor = preprocess(*decoded, model.config().input);
  ASSERT_TRUE(tensor.is_ok()) << tensor.status().to_string();

  auto run = [&](auto set_input) {
    std::promise<Result<ClassifyResult>> promise;
    InferenceJob j = job([&](Result<ClassifyResult> r) { promise.set_value(std::move(r)); });
    set_input(j);
    j.prepared.clear();
    if (Status ready = stage_.prepare(j); !ready.is_ok()) return Result<ClassifyResult>(ready);
    queue.submit(std::move(j));
    auto future = promise.get_future();
    return wait(future);
  };
  auto from_image = run([](InferenceJob&) {});
  ASSERT_TRUE(from_image.is_ok()) << from_image.status().to_string();
  auto from_tensor = run([&](InferenceJob& j) { j.input = InputTensor{tensor->data}; });
  ASSERT_TRUE(from_tensor.is_ok()) << from_tensor.status().to_string();
  EXPECT_EQ(from_tensor->probabilities, from_image->probabilities);
  auto from_pixels = run([&](InferenceJob& j) { j.input = DecodedPixels{&*decoded}; });
  ASSERT_TRUE(from_pixels.is_ok()) << from_pixels.status().to_string();
  EXPECT_EQ(from_pixels->probabilities, from_image->probabilities);

  const std::vector<float> short_tensor(10, 0.0f);
  auto refused = run([&](InferenceJob& j) { j.input = InputTensor{short_tensor}; });
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
}

// An idle queue runs a delay-0 job on the submitter's thread: answered before submit() returns,
// on that thread, with the result a worker would give; a delay > 0 model's job still waits for
// its batch on a worker.
TEST_F(InferenceQueueTest, AnIdleQueueRunsADelayZeroJobOnTheSubmittersThread) {
  use_policy({.max_batch = 8, .max_queue_delay_us = 0, .max_queue = 64});
  InferenceQueue queue({});
  std::thread::id answered_on;
  Result<ClassifyResult> result = Status::internal("not answered");
  const uint64_t ticket = queue.submit(job([&](Result<ClassifyResult> r) {
    answered_on = std::this_thread::get_id();
    result = std::move(r);
  }));
  EXPECT_EQ(ticket, 0u);  // answered already: nothing to cancel
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  EXPECT_EQ(answered_on, std::this_thread::get_id());
  EXPECT_EQ(result->batch_size, 1u);
  EXPECT_EQ(result->classes.size(), 5u);
  EXPECT_EQ(queue.ran_inline(), 1u);

  // The same job with the inline path off, on a worker: the same answer.
  InferenceQueueOptions off;
  off.run_inline_when_idle = false;
  InferenceQueue workers(off);
  std::promise<std::pair<std::thread::id, Result<ClassifyResult>>> promise;
  workers.submit(job([&](Result<ClassifyResult> r) { promise.set_value({std::this_thread::get_id(), std::move(r)}); }));
  auto future = promise.get_future();
  ASSERT_EQ(future.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  auto [thread, queued] = future.get();
  ASSERT_TRUE(queued.is_ok()) << queued.status().to_string();
  EXPECT_NE(thread, std::this_thread::get_id());
  EXPECT_EQ(queued->probabilities, result->probabilities);
  EXPECT_EQ(workers.ran_inline(), 0u);
}

// While a batch runs (here an inline one, held in its callback), a new job is queued for a
// worker, not run inline; and with workers = 1 the inline batch holds the only batch slot, so the
// worker starts it only once the inline batch is over.
TEST_F(InferenceQueueTest, ABusyQueueHandsTheJobToAWorkerWithinTheBatchBound) {
  use_policy({.max_batch = 8, .max_queue_delay_us = 0, .max_queue = 64});
  InferenceQueueOptions options;
  options.workers = 1;
  InferenceQueue queue(options);
  std::mutex mu;
  std::condition_variable cv;
  bool entered = false;
  bool released = false;
  std::thread first([&] {
    queue.submit(job([&](const Result<ClassifyResult>&) {
      std::unique_lock lock(mu);
      entered = true;
      cv.notify_all();
      cv.wait_for(lock, std::chrono::seconds(30), [&] { return released; });
    }));
  });
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return entered; }));
  }
  EXPECT_EQ(queue.ran_inline(), 1u);
  uint64_t ticket = 0;
  auto second = submit(queue, &ticket);
  EXPECT_NE(ticket, 0u);  // queued, not run here
  EXPECT_EQ(queue.ran_inline(), 1u);
  // The only batch slot is the inline run's: the worker leaves the job queued meanwhile.
  EXPECT_EQ(second.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
  EXPECT_EQ(queue.depth(), 1u);
  {
    std::lock_guard lock(mu);
    released = true;
  }
  cv.notify_all();
  first.join();
  auto result = wait(second);
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  EXPECT_EQ(queue.depth(), 0u);
}

// The inline path keeps the queue's rules: a job past its deadline or cancelled is answered so,
// not run; a job that asks not to run inline (a many-image request's) goes to a worker.
TEST_F(InferenceQueueTest, TheInlinePathAnswersExpiredAndCancelledJobsAndHonoursTheJobsWish) {
  use_policy({.max_batch = 8, .max_queue_delay_us = 0, .max_queue = 64});
  InferenceQueue queue({});
  Status expired;
  InferenceJob late = job([&](const Result<ClassifyResult>& r) { expired = r.status(); });
  late.deadline = SteadyClock::now() - std::chrono::seconds(1);
  queue.submit(std::move(late));
  EXPECT_EQ(expired.code(), StatusCode::kDeadlineExceeded);
  Status cancelled;
  InferenceJob gone = job([&](const Result<ClassifyResult>& r) { cancelled = r.status(); });
  gone.cancelled = [] { return true; };
  queue.submit(std::move(gone));
  EXPECT_EQ(cancelled.code(), StatusCode::kCancelled);
  EXPECT_EQ(queue.ran_inline(), 2u);

  std::promise<std::thread::id> promise;
  InferenceJob part = job([&](const Result<ClassifyResult>&) { promise.set_value(std::this_thread::get_id()); });
  part.may_run_inline = false;
  queue.submit(std::move(part));
  auto future = promise.get_future();
  ASSERT_EQ(future.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_NE(future.get(), std::this_thread::get_id());
  EXPECT_EQ(queue.ran_inline(), 2u);
}

}  // namespace
}  // namespace tessera::testing
