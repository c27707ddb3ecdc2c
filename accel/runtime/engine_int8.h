// One device instance's int8 pipeline: the compiled model's segments in order per batch
// (fabric -> host -> fabric ...), the fabric segments on this instance's thread (one user of the
// device; a run that never returns is caught by the caller's watchdog), the host segments on the
// caller's thread between them. A caller blocks for its batch anyway, so running its host
// segments itself keeps the overlap (another caller's batch is on the fabric meanwhile) and
// saves the two thread hand-offs a host thread would cost. A batch's later fabric segments go
// ahead of new batches' first ones, so a batch in flight is not starved by new arrivals.
// Internal to accel/runtime.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>

#include "accel/device/device.h"
#include "accel/plan/compiler.h"
#include "accel/runtime/device_supervisor.h"
#include "accel/runtime/engine.h"
#include "accel/runtime/model_config.h"

namespace tessera {

class Int8Path {
 public:
  static Result<std::unique_ptr<Int8Path>> create(const ModelConfig& config, const Graph& graph,
                                                  const EngineOptions& options);
  // The same compiled model on another device instance: its own program loads, pipeline and health.
  static Result<std::unique_ptr<Int8Path>> create_instance(const Int8Path& first,
                                                           std::shared_ptr<DeviceSupervisor> supervisor);
  ~Int8Path();

  const DeviceSupervisor& supervisor() const { return *supervisor_; }
  const plan::CompiledModel& compiled() const { return compiled_; }
  // Batches handed to this instance and not yet answered (Int8Backend::pick_instance reads it).
  std::atomic<int> outstanding{0};

  // Runs the batch's segments. `first_fabric_done` is called on the caller's thread once when the
  // batch's first fabric segment is over (not when the batch failed before).
  Result<Inference> infer(const Tensor& batch, const std::function<void()>& first_fabric_done);
  std::string summary() const;
  // The tile plan of the fabric part (null when everything runs on the host).
  const plan::ModelPlan* plan() const { return compiled_.has_fabric ? &compiled_.plan : nullptr; }

 private:
  // One batch on its way through the segments; shared by the caller and the fabric thread, so a
  // caller that gave up on a wedged device leaves it to the fabric thread.
  struct Job {
    int64_t images = 0;
    std::map<std::string, Tensor> values;  // float tensors by name: the input, then each segment's outputs
    size_t segment = 0;                    // the fabric segment the fabric thread runs next
    bool new_batch = false;                // that segment is the batch's first fabric segment
    Inference result;
    Status status;
    Status device_error;             // the device's own failure (not the batch's): answer UNAVAILABLE, recover
    std::promise<void> fabric_done;  // the current fabric segment is over (status, values, result set)
  };

  Int8Path() = default;
  // Loads the programs on the device and starts the pipeline's thread.
  Status start();
  Status fabric_stage(Job& job);
  // Runs segment k's program on `count` images; a failure of the device goes to job.device_error too.
  Status run_chunk(Job& job, size_t k, std::span<const int8_t> in, uint32_t count, std::span<int8_t> out);
  // Loads every fabric segment's program for the device's current generation.
  Status load_programs();
  // When the fabric stage failed through the device: answers the job UNAVAILABLE (the device is
  // RECOVERING by then), resets the device and reloads the programs. False otherwise.
  bool handle_device_error(Job& job);
  void recover();
  // How long infer() waits for a fabric segment of `images` before it takes the device for
  // wedged: every run ahead of it and its own within their timeouts, plus time for a reset.
  std::chrono::milliseconds watchdog(int64_t images) const;
  Status host_stage(Job& job, size_t k);
  // Runs fabric segment `k` of the job on the fabric thread (or here, unpipelined) and waits.
  Status fabric_segment(const std::shared_ptr<Job>& job, size_t k, bool first);
  void fabric_loop();
  // The fabric stage of one job, its device error handled; sets fabric_done.
  void run_fabric(Job& job);
  // The answer once every segment ran.
  Result<Inference> finish(Job& job);

  EngineOptions options_;
  int num_classes_ = 0;
  std::string output_name_;
  plan::CompiledModel compiled_;
  std::map<std::string, size_t> last_read_;  // tensor -> the last segment that reads it
  std::shared_ptr<DeviceSupervisor> supervisor_;
  std::map<size_t, std::unique_ptr<DeviceProgram>>
      programs_;                    // segment -> program; empty after a failure until reloaded
  uint64_t loaded_generation_ = 0;  // the supervisor's generation programs_ were loaded in
  std::string device_kind_;
  double clock_mhz_ = 0;

  // Bounded queue between callers and the fabric thread; depth 2 keeps one new batch waiting
  // (a batch's later segments go to the front and are not counted against it).
  static constexpr size_t kQueueDepth = 2;
  std::mutex mu_;
  std::condition_variable fabric_cv_, space_cv_;
  std::deque<std::shared_ptr<Job>> fabric_queue_;
  size_t new_batches_queued_ = 0;
  bool stopping_ = false;
  std::thread fabric_thread_;
  std::mutex sequential_mu_;  // unpipelined mode: one batch at a time through every segment
};

}  // namespace tessera
