// A model version's statistics (server/models/model_statistics.h): what each record adds, under
// concurrent recorders (this file runs in the TSan tree), and what admission records for every
// door: a success with its stages, a refusal after the model was found, a failed job, nothing for
// a model that is not served, and one record for a request its door counts itself.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <memory>
#include <thread>
#include <vector>

#include "accel/runtime/engine.h"
#include "accel/runtime/model_config.h"
#include "server/batching/admission.h"
#include "server/batching/inference_queue.h"
#include "server/models/model_repository.h"
#include "server/models/model_statistics.h"

namespace tessera {
namespace {

using std::chrono::nanoseconds;

uint64_t now_ms() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

TEST(ModelStatistics, RecordsAddUp) {
  ModelStatistics stats;
  EXPECT_EQ(stats.snapshot().last_inference_ms, 0u);
  const uint64_t before = now_ms();
  stats.record_success(nanoseconds(1000), {nanoseconds(100), nanoseconds(200), nanoseconds(300), nanoseconds(40)});
  stats.record_success(nanoseconds(2000), {nanoseconds(1), nanoseconds(2), nanoseconds(3), nanoseconds(4)});
  stats.record_failure(nanoseconds(500));
  stats.record_execution(2, {nanoseconds(999), nanoseconds(10), nanoseconds(20), nanoseconds(30)});
  stats.record_execution(1, {{}, nanoseconds(5), nanoseconds(6), nanoseconds(7)});
  stats.record_execution(2, {{}, nanoseconds(1), nanoseconds(1), nanoseconds(1)});
  const ModelStatisticsSnapshot s = stats.snapshot();
  EXPECT_GE(s.last_inference_ms, before);
  EXPECT_LE(s.last_inference_ms, now_ms());
  EXPECT_EQ(s.success.count, 2u);
  EXPECT_EQ(s.success.ns, 3000u);
  EXPECT_EQ(s.fail.count, 1u);
  EXPECT_EQ(s.fail.ns, 500u);
  EXPECT_EQ(s.queue.count, 2u);
  EXPECT_EQ(s.queue.ns, 101u);
  EXPECT_EQ(s.compute_input.ns, 202u);
  EXPECT_EQ(s.compute_infer.ns, 303u);
  EXPECT_EQ(s.compute_output.ns, 44u);
  EXPECT_EQ(s.inference_count, 5u);
  EXPECT_EQ(s.execution_count, 3u);
  ASSERT_EQ(s.batches.size(), 2u);
  const BatchStat& two = s.batches.at(2);
  EXPECT_EQ(two.batch_size, 2u);
  EXPECT_EQ(two.compute_input.count, 2u);
  EXPECT_EQ(two.compute_input.ns, 11u);
  EXPECT_EQ(two.compute_infer.ns, 21u);
  EXPECT_EQ(two.compute_output.ns, 31u);
  EXPECT_EQ(s.batches.at(1).compute_output.ns, 7u);
  // A negative duration (a clock that went back) adds nothing rather than wrapping around.
  stats.record_failure(nanoseconds(-5));
  EXPECT_EQ(stats.snapshot().fail.ns, 500u);
}

// Recorders on several threads lose nothing; a snapshot's counts agree with its batch sizes.
TEST(ModelStatistics, ConcurrentRecordersLoseNothing) {
  ModelStatistics stats;
  constexpr int kThreads = 4;
  constexpr int kEach = 2000;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (uint64_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&stats, t] {
      for (int i = 0; i < kEach; ++i) {
        stats.record_success(nanoseconds(10), {nanoseconds(1), nanoseconds(1), nanoseconds(1), nanoseconds(1)});
        if (i % 2 == 0) stats.record_failure(nanoseconds(3));
        stats.record_execution(t + 1, {{}, nanoseconds(1), nanoseconds(1), nanoseconds(1)});
      }
    });
  }
  // Snapshots taken meanwhile are each self-consistent.
  for (int i = 0; i < 50; ++i) {
    const ModelStatisticsSnapshot s = stats.snapshot();
    uint64_t images = 0;
    uint64_t runs = 0;
    for (const auto& [size, batch] : s.batches) {
      images += size * batch.compute_infer.count;
      runs += batch.compute_infer.count;
    }
    EXPECT_EQ(images, s.inference_count);
    EXPECT_EQ(runs, s.execution_count);
  }
  for (auto& thread : threads) thread.join();
  const ModelStatisticsSnapshot s = stats.snapshot();
  EXPECT_EQ(s.success.count, uint64_t{kThreads * kEach});
  EXPECT_EQ(s.success.ns, uint64_t{kThreads * kEach * 10});
  EXPECT_EQ(s.compute_output.count, uint64_t{kThreads * kEach});
  EXPECT_EQ(s.fail.count, uint64_t{kThreads * kEach / 2});
  EXPECT_EQ(s.execution_count, uint64_t{kThreads * kEach});
  EXPECT_EQ(s.inference_count, uint64_t{(1 + 2 + 3 + 4) * kEach});
}

class AdmissionStatisticsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto config = load_model_config(std::filesystem::path(TESSERA_SOURCE_DIR) / "models/fashion-mnist");
    ASSERT_TRUE(config.is_ok()) << config.status().to_string();
    auto engine = Engine::load(*config);
    ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
    auto model = std::make_unique<ServedModel>();
    model->engine = std::move(engine).value();
    model->batching.max_queue_delay_us = 0;
    std::vector<std::unique_ptr<ServedModel>> models;
    models.push_back(std::move(model));
    models_ = std::make_unique<ModelRepository>(std::move(models));
    InferenceQueueOptions options;
    options.workers = 1;
    queue_ = std::make_unique<InferenceQueue>(options);
    admission_ =
        std::make_unique<Admission>(*models_, *queue_, in_flight_, DecodeLimits{.max_bytes = int64_t{1} << 20});
    // A Fashion-MNIST image: the first of the model's calibration images.
    const std::filesystem::path calibration =
        std::filesystem::path(TESSERA_SOURCE_DIR) / "models/fashion-mnist/calibration";
    std::filesystem::path first;
    for (const auto& entry : std::filesystem::directory_iterator(calibration)) {
      if (first.empty() || entry.path() < first) first = entry.path();
    }
    std::ifstream in(first, std::ios::binary);
    png_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    ASSERT_FALSE(png_.empty()) << "no image in " << calibration;
  }

  AdmissionRequest request(const std::vector<uint8_t>& bytes) {
    AdmissionRequest r;
    r.via = "grpc";
    r.model = "fashion-mnist";
    r.top_k = uint64_t{1};
    r.input = JobInput{EncodedImage{{bytes.data(), bytes.size()}}};
    return r;
  }

  // Submits and waits (bounded) for the answer.
  Result<ClassifyResult> run(AdmissionRequest r) {
    Admitted admitted = admission_->admit(std::move(r));
    EXPECT_TRUE(admitted) << admitted.status().to_string();
    if (!admitted) return admitted.status();
    auto answered = std::make_shared<std::promise<Result<ClassifyResult>>>();
    auto future = answered->get_future();
    admitted->done = [answered](Result<ClassifyResult> result) { answered->set_value(std::move(result)); };
    admission_->submit(std::move(admitted));
    EXPECT_EQ(future.wait_for(std::chrono::seconds(30)), std::future_status::ready);
    return future.get();
  }

  ModelStatisticsSnapshot stats() const { return models_->find("fashion-mnist")->statistics->snapshot(); }

  std::vector<uint8_t> png_;
  const std::vector<uint8_t> garbage_ = std::vector<uint8_t>(16, 0x42);
  std::unique_ptr<ModelRepository> models_;
  InFlightTracker in_flight_;
  std::unique_ptr<InferenceQueue> queue_;
  std::unique_ptr<Admission> admission_;
};

TEST_F(AdmissionStatisticsTest, SuccessCarriesItsStages) {
  const Result<ClassifyResult> result = run(request(png_));
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  // The statistics are recorded before the door's callback runs: a caller that asks after its
  // answer sees its request.
  const ModelStatisticsSnapshot s = stats();
  EXPECT_EQ(s.success.count, 1u);
  EXPECT_EQ(s.fail.count, 0u);
  EXPECT_EQ(s.inference_count, 1u);
  EXPECT_EQ(s.execution_count, 1u);
  ASSERT_EQ(s.batches.count(1), 1u);
  EXPECT_GT(s.compute_input.ns, 0u);
  EXPECT_GT(s.compute_infer.ns, 0u);
  EXPECT_GT(s.compute_output.ns, 0u);
  EXPECT_EQ(static_cast<uint64_t>(result->stages.compute_infer.count()), s.compute_infer.ns);
  EXPECT_LE(s.queue.ns + s.compute_input.ns + s.compute_infer.ns + s.compute_output.ns, s.success.ns);
}

TEST_F(AdmissionStatisticsTest, FailuresAfterTheModelIsKnownCount) {
  // Refused by admission: an empty image, a bad top-k.
  EXPECT_FALSE(admission_->admit(request({})));
  AdmissionRequest bad_top_k = request(png_);
  bad_top_k.top_k = Status::invalid_argument("top_k is not a number");
  EXPECT_FALSE(admission_->admit(std::move(bad_top_k)));
  // Refused by its door after naming a served model.
  EXPECT_FALSE(admission_->refuse(request(png_), Status::invalid_argument("the tensor has the wrong shape")));
  // Answered without a result: the batcher cannot decode it.
  EXPECT_FALSE(run(request(garbage_)).is_ok());
  // No served model of that name: nowhere to count.
  AdmissionRequest unknown = request(png_);
  unknown.model = "no-such-model";
  EXPECT_FALSE(admission_->admit(std::move(unknown)));
  const ModelStatisticsSnapshot s = stats();
  EXPECT_EQ(s.fail.count, 4u);
  EXPECT_EQ(s.success.count, 0u);
  EXPECT_EQ(s.inference_count, 0u);
  EXPECT_EQ(s.execution_count, 0u);
}

// A request of several images (admission's group form) counts once, with its images' stages;
// the executions count every image. A group refused after its model is known counts once too.
TEST_F(AdmissionStatisticsTest, AManyImageRequestCountsOnce) {
  const std::vector<JobInput> images(3, JobInput{EncodedImage{{png_.data(), png_.size()}}});
  AdmittedGroup group = admission_->admit_group(request(png_), images);
  ASSERT_TRUE(group) << group.status().to_string();
  auto answered = std::make_shared<std::promise<Result<std::vector<ClassifyResult>>>>();
  auto future = answered->get_future();
  admission_->submit_group(std::move(group), [answered](Result<std::vector<ClassifyResult>> results) {
    answered->set_value(std::move(results));
  });
  ASSERT_EQ(future.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  const auto results = future.get();
  ASSERT_TRUE(results.is_ok()) << results.status().to_string();
  ModelStatisticsSnapshot s = stats();
  EXPECT_EQ(s.success.count, 1u);
  EXPECT_EQ(s.fail.count, 0u);
  EXPECT_EQ(s.inference_count, 3u);  // executions count every image
  uint64_t decode_ns = 0;
  for (const ClassifyResult& r : *results) decode_ns += static_cast<uint64_t>(r.stages.compute_input.count());
  EXPECT_EQ(s.compute_input.ns, decode_ns) << "the request's decode is all its images'";

  std::vector<JobInput> with_empty = images;
  with_empty.emplace_back(EncodedImage{});
  EXPECT_FALSE(admission_->admit_group(request(png_), std::move(with_empty)));
  s = stats();
  EXPECT_EQ(s.success.count, 1u);
  EXPECT_EQ(s.fail.count, 1u);
}

}  // namespace
}  // namespace tessera
