// The int8 path of an Engine: calibration, compilation, the device program, and the two-stage
// fabric || host pipeline: the fabric stage runs on this instance's thread (one user of the
// device; a run that never returns is caught by the caller's watchdog), the host stage on the
// caller's thread when its batch is back. A caller blocks for its batch anyway, so running its
// host stage itself keeps the overlap (another caller's batch is on the fabric meanwhile) and
// saves the two thread hand-offs (fabric -> host thread -> caller) a host thread would cost.
// Internal to accel/runtime.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>

#include "accel/device/device.h"
#include "accel/plan/compiler.h"
#include "accel/runtime/engine.h"

namespace tessera {

// Rows of an N x K score tensor.
Result<std::vector<std::vector<float>>> split_rows(const Tensor& scores, int64_t n, int classes);

struct Engine::Int8Path {
  static Result<std::unique_ptr<Int8Path>> create(const ModelConfig& config, const Graph& graph,
                                                  const EngineOptions& options);
  // The same compiled model on another device instance: its own program load, pipeline and health.
  static Result<std::unique_ptr<Int8Path>> create_instance(const Int8Path& first,
                                                           std::shared_ptr<DeviceSupervisor> supervisor);
  ~Int8Path();

  const DeviceSupervisor& supervisor() const { return *supervisor_; }
  // Batches handed to this instance and not yet answered (Engine::pick_instance reads it).
  std::atomic<int> outstanding{0};

  // fabric_done: see Engine::infer.
  Result<Inference> infer(const Tensor& batch, const std::function<void()>& fabric_done);
  std::string summary() const;
  // The tile plan of the fabric part (null when everything runs on the host).
  const plan::ModelPlan* plan() const { return compiled_.has_fabric ? &compiled_.plan : nullptr; }

 private:
  // One batch on its way through the stages; shared by the caller and the fabric thread, so a
  // caller that gave up on a wedged device leaves it to the fabric thread.
  struct Job {
    Tensor input;     // float N x C x H x W (a copy: a caller past its watchdog no longer holds its own)
    Tensor boundary;  // float, the fabric output dequantised
    Inference result;
    Status status;
    Status device_error;             // the device's own failure (not the batch's): answer UNAVAILABLE, recover
    std::promise<void> fabric_done;  // the fabric stage is over (status, boundary, result set)
  };

  Int8Path() = default;
  // Loads the program on the device and starts the pipeline's threads.
  Status start();
  Status fabric_stage(Job& job);
  // Runs the program on `count` images; a failure of the device goes to job.device_error too.
  Status run_chunk(Job& job, std::span<const int8_t> in, uint32_t count, std::span<int8_t> out);
  // Loads the program for the device's current generation.
  Status load_program();
  // When the fabric stage failed through the device: answers the job UNAVAILABLE (the device is
  // RECOVERING by then), resets the device and reloads the program. False otherwise.
  bool handle_device_error(Job& job);
  void recover();
  // How long infer() waits for a batch of `images` before it takes the device for wedged: every
  // run ahead of it and its own within their timeouts, plus time for a reset. Zero: no limit.
  std::chrono::milliseconds watchdog(int64_t images) const;
  Status host_stage(Job& job);
  // After the fabric stage: the host stage on the caller's thread, and the job's answer.
  Result<Inference> host_part(Job& job);
  void fabric_loop();
  // The fabric stage of one job, its device error handled; sets fabric_done.
  void run_fabric(Job& job);

  EngineOptions options_;
  int num_classes_ = 0;
  std::string output_name_;
  plan::CompiledModel compiled_;
  std::shared_ptr<DeviceSupervisor> supervisor_;
  std::unique_ptr<DeviceProgram> program_;  // null after a failure until reloaded
  uint64_t loaded_generation_ = 0;          // the supervisor's generation program_ was loaded in
  std::string device_kind_;
  double clock_mhz_ = 0;

  // Bounded queue between callers and the fabric thread; depth 2 keeps one batch waiting.
  static constexpr size_t kQueueDepth = 2;
  std::mutex mu_;
  std::condition_variable fabric_cv_, space_cv_;
  std::deque<std::shared_ptr<Job>> fabric_queue_;
  bool stopping_ = false;
  std::thread fabric_thread_;
  std::mutex sequential_mu_;  // unpipelined mode: one batch at a time on the device
};

}  // namespace tessera
