// The batcher grows a batch while the device is busy: a batch whose oldest job waited the queue
// delay but that is not full waits, taking the jobs that arrive meanwhile, as long as the model's
// device has a batch in its fabric stage; a full batch still goes at once; deadlines, stop() and
// the option to turn it off hold. The model is the bundled one in int8 on an emulator whose runs
// wait at a gate the test opens, so "the device is busy" lasts exactly as long as the test says.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "accel/device/device_registry.h"
#include "server/batching/inference_queue.h"
#include "server/models/model_repository.h"
#include "tests/integration/batching/queued_job.h"
#include "tests/integration/fmnist_images.h"
#include "tests/integration/tesserad_process.h"

namespace tessera::testing {
namespace {

// Holds every run until open() (or 30 s), then runs it on the emulator.
class Gate {
 public:
  void open() {
    {
      std::lock_guard lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  void pass() {
    ++entered_;
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(30), [&] { return open_; });
  }
  int entered() const { return entered_.load(); }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  std::atomic<int> entered_{0};
};

class GatedProgram : public DeviceProgram {
 public:
  GatedProgram(std::unique_ptr<DeviceProgram> inner, std::shared_ptr<Gate> gate)
      : inner_(std::move(inner)), gate_(std::move(gate)) {}
  Status run(std::span<const int8_t> inputs, uint32_t batch, std::span<int8_t> outputs,
             std::chrono::milliseconds timeout) override {
    gate_->pass();
    return inner_->run(inputs, batch, outputs, timeout);
  }
  uint64_t last_run_cycles() const override { return inner_->last_run_cycles(); }

 private:
  std::unique_ptr<DeviceProgram> inner_;
  std::shared_ptr<Gate> gate_;
};

class GatedDevice : public Device {
 public:
  GatedDevice(std::unique_ptr<Device> inner, std::shared_ptr<Gate> gate)
      : inner_(std::move(inner)), gate_(std::move(gate)) {}
  DeviceInfo info() const override { return inner_->info(); }
  Result<std::unique_ptr<DeviceProgram>> load(const CompiledProgram& program, uint32_t max_batch) override {
    TESSERA_ASSIGN_OR_RETURN(auto loaded, inner_->load(program, max_batch));
    return std::unique_ptr<DeviceProgram>(std::make_unique<GatedProgram>(std::move(loaded), gate_));
  }

 private:
  std::unique_ptr<Device> inner_;
  std::shared_ptr<Gate> gate_;
};

// Polls `done` every millisecond for up to 20 s.
bool eventually(const std::function<bool()>& done) {
  const auto until = SteadyClock::now() + std::chrono::seconds(20);
  while (!done()) {
    if (SteadyClock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

class BatchGrowthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto images = load_fmnist_images();
    ASSERT_FALSE(images.empty());
    image_ = read_binary(images[0].png);
    auto config = load_model_config(bundled_models_dir() / "fashion-mnist");
    ASSERT_TRUE(config.is_ok()) << config.status().to_string();
    DeviceOptions device_options;
    device_options.kind = "emu";
    auto emulator = open_device(device_options);
    ASSERT_TRUE(emulator.is_ok()) << emulator.status().to_string();
    EngineOptions engine_options;
    engine_options.precision = Precision::kInt8;
    engine_options.device = std::make_shared<GatedDevice>(std::move(emulator).value(), gate_);
    auto engine = Engine::load(*config, engine_options);
    ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
    auto model = std::make_unique<ServedModel>();
    model->engine = std::move(engine).value();
    // The delay is short: without growth, a partial batch would leave 1 ms after its first job.
    model->batching = {.max_batch = 8, .max_queue_delay_us = 1000, .max_queue = 64};
    model->precision = "int8";
    model->device = "emu";
    std::vector<std::unique_ptr<ServedModel>> models;
    models.push_back(std::move(model));
    models_ = std::make_unique<ModelRepository>(std::move(models));
  }

  void TearDown() override { gate_->open(); }

  std::future<Result<ClassifyResult>> submit(InferenceQueue& queue, uint64_t* ticket = nullptr,
                                             SteadyClock::time_point deadline = SteadyClock::time_point::max()) {
    InferenceJob j;
    j.model = models_->default_model();
    j.input = EncodedImage{{reinterpret_cast<const uint8_t*>(image_.data()), image_.size()}};
    j.request_id = "test";
    j.deadline = deadline;
    return submit_for_answer(queue, std::move(j), ticket);
  }

  static Result<ClassifyResult> wait(std::future<Result<ClassifyResult>>& f) { return wait_answer(f); }

  // A queue whose first batch (one job) is on the device, held at the gate.
  std::future<Result<ClassifyResult>> occupy_device(InferenceQueue& queue) {
    auto first = submit(queue);
    EXPECT_TRUE(eventually([&] { return gate_->entered() == 1; })) << "the first batch never reached the device";
    return first;
  }

  std::shared_ptr<Gate> gate_ = std::make_shared<Gate>();
  std::unique_ptr<ModelRepository> models_;
  std::string image_;
};

InferenceQueueOptions two_workers(bool grow) {
  InferenceQueueOptions options;
  options.workers = 2;
  options.grow_while_busy = grow;
  return options;
}

// Jobs arriving while a batch is on the device wait past the delay and leave as one full batch,
// not as several small ones; a partial batch then waits for the device and goes when it is free.
TEST_F(BatchGrowthTest, ABatchGrowsWhileTheDeviceIsBusyAndAFullOneGoesAtOnce) {
  InferenceQueue queue(two_workers(true));
  auto first = occupy_device(queue);
  std::vector<std::future<Result<ClassifyResult>>> joined;
  joined.reserve(8);
  for (int i = 0; i < 5; ++i) joined.push_back(submit(queue));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // 50 times the queue delay
  EXPECT_EQ(queue.depth(), 5u) << "a partial batch waits while the device is busy";
  for (int i = 0; i < 3; ++i) joined.push_back(submit(queue));
  EXPECT_TRUE(eventually([&] { return queue.depth() == 0; })) << "a full batch goes at once";
  std::vector<std::future<Result<ClassifyResult>>> late;
  late.reserve(2);
  for (int i = 0; i < 2; ++i) late.push_back(submit(queue));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(queue.depth(), 2u) << "two batches at the device: the next partial one waits";
  EXPECT_EQ(gate_->entered(), 1) << "the full batch waits at the engine behind the first";

  gate_->open();
  auto r = wait(first);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->batch_size, 1u);
  for (auto& f : joined) {
    r = wait(f);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ(r->batch_size, 8u) << "every job that arrived while the device was busy joined one batch";
  }
  for (auto& f : late) {
    r = wait(f);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ(r->batch_size, 2u) << "a partial batch goes once the device is free, without more company";
  }
  queue.stop();
}

// While a batch waits for the device: a job whose deadline passes is answered DEADLINE_EXCEEDED
// at its deadline, a cancelled one CANCELLED, and stop() sends the rest without waiting.
TEST_F(BatchGrowthTest, DeadlinesCancelsAndStopHoldWhileABatchWaitsForTheDevice) {
  InferenceQueue queue(two_workers(true));
  auto first = occupy_device(queue);
  auto expiring = submit(queue, nullptr, SteadyClock::now() + std::chrono::milliseconds(100));
  uint64_t ticket = 0;
  auto cancelled = submit(queue, &ticket);
  auto waiting = submit(queue);
  EXPECT_EQ(wait(expiring).status().code(), StatusCode::kDeadlineExceeded) << "answered with the device still busy";
  EXPECT_EQ(gate_->entered(), 1);
  EXPECT_TRUE(queue.cancel(ticket));
  EXPECT_EQ(wait(cancelled).status().code(), StatusCode::kCancelled);
  EXPECT_EQ(queue.depth(), 1u);

  std::thread stopper([&] { queue.stop(); });
  EXPECT_TRUE(eventually([&] { return queue.depth() == 0; })) << "stopping sends the waiting batch at once";
  gate_->open();
  stopper.join();
  auto r = wait(first);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  r = wait(waiting);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->batch_size, 1u);
}

// grow_while_busy off (tesserad --grow-batch-while-busy false): a partial batch leaves at its
// delay, busy device or not, and waits at the engine.
TEST_F(BatchGrowthTest, WithoutGrowthAPartialBatchLeavesAtItsDelay) {
  InferenceQueue queue(two_workers(false));
  auto first = occupy_device(queue);
  std::vector<std::future<Result<ClassifyResult>>> rest;
  rest.reserve(3);
  for (int i = 0; i < 3; ++i) rest.push_back(submit(queue));
  EXPECT_TRUE(eventually([&] { return queue.depth() == 0; })) << "the partial batch left at its delay";
  gate_->open();
  ASSERT_TRUE(wait(first).is_ok());
  for (auto& f : rest) {
    auto r = wait(f);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_LE(r->batch_size, 3u);
  }
  queue.stop();
}

}  // namespace
}  // namespace tessera::testing
