// Engine: a loaded model ready to run batches, through one of two backends (the seam the
// batcher calls, inference_backend.h):
//  - fp32: the whole graph on the host's float reference path (backend_fp32.h);
//  - int8: the partition's segments in order per batch, fabric ones (conv/pool/add/concat,
//    kernels/kernel_abi.h) on a Device (the emulator or a board), host ones (FC, softmax, LRN,
//    ...) in float on the caller's thread, so a batch's host segment overlaps the next batch's
//    fabric segment (NEURAghe's software pipeline, seeds/003) (backend_int8.h, engine_int8.h).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "accel/common/status.h"
#include "accel/device/device.h"
#include "accel/graph/graph.h"
#include "accel/graph/tensor.h"
#include "accel/plan/model_plan.h"
#include "accel/plan/partition.h"
#include "accel/plan/plan_cache.h"
#include "accel/runtime/device_supervisor.h"
#include "accel/runtime/inference_backend.h"
#include "accel/runtime/model_config.h"

namespace tessera {

struct EngineOptions {
  Precision precision = Precision::kFp32;
  std::shared_ptr<Device> device;  // required for kInt8
  // int8: the health of `device`, shared by every engine on it (null: the engine makes its own).
  // A failed run is answered UNAVAILABLE; the device is then reset and the program reloaded.
  std::shared_ptr<DeviceSupervisor> supervisor;
  // int8: the device instances the model runs on, each with its own program, pipeline and health
  // (an instance group); empty: `device` and `supervisor` alone. Planned once, for the first one's
  // board; each batch goes to the instance with the least outstanding work.
  std::vector<std::shared_ptr<DeviceSupervisor>> instances;
  uint32_t max_batch = 8;  // largest batch one device run takes
  bool pipelined = true;   // int8: the fabric stage on its own thread, overlapping callers' host stages
  std::chrono::milliseconds device_timeout{10000};
  // int8 calibration inputs (each N x C x H x W, preprocessed); empty: the images of the
  // model's [quantization] calibration folder.
  std::vector<Tensor> calibration_samples;
  // int8: how the tiles are planned for the device's board profile (DeviceInfo::board), and
  // where plans are cached (null: search every time).
  plan::PlanOptions plan;
  std::shared_ptr<plan::PlanCache> plan_cache;
  // int8: test and tuning hooks of the split (layers kept on the host, forced segment starts).
  plan::PartitionOptions partition;
};

class Engine {
 public:
  static Result<std::unique_ptr<Engine>> load(const ModelConfig& config, const EngineOptions& options = {});
  ~Engine();

  const ModelConfig& config() const { return config_; }
  int num_classes() const { return num_classes_; }
  // The seam the batcher calls: infer, instance count, output post-processing.
  const InferenceBackend& backend() const { return *backend_; }
  Precision precision() const { return backend_->precision(); }
  // What runs where, e.g. "int8: 6 fabric layers (...) in 1 segment, 0 hand-overs; host: ... [device emu ...]".
  const std::string& summary() const { return backend_->summary(); }
  // int8: the fabric part's tile plan on the device's board (null for fp32 or no fabric layer).
  const plan::ModelPlan* plan() const { return backend_->plan(); }
  // int8: the fabric's share of the multiply-adds, segments, hand-overs, host ops (null for fp32).
  const plan::Placement* placement() const { return backend_->placement(); }
  // int8: the health of each device instance the model runs on, in order (empty for fp32).
  std::vector<const DeviceSupervisor*> instances() const { return backend_->instances(); }

  // Runs a batch (N x C x H x W, preprocessed), checked against the model's input, on the
  // backend (InferenceBackend::infer; `listener` may be null).
  Result<Inference> infer(const Tensor& batch, BatchListener* listener = nullptr) const;
  // The batches that can hold a device at once (1 for fp32: the host).
  size_t device_instances() const { return backend_->instance_count(); }

  // Raw outputs (logits), one row of num_classes() per image.
  Result<std::vector<std::vector<float>>> run(const Tensor& batch) const;
  // run() followed by softmax over each row (unless the graph already ends with a Softmax).
  Result<std::vector<std::vector<float>>> classify(const Tensor& batch) const;

  // Softmax over each row in place (no-op when the graph ends with a Softmax).
  void to_probabilities(std::vector<std::vector<float>>& rows) const { backend_->to_probabilities(rows); }

 private:
  Engine(ModelConfig config, int num_classes);
  Status check_batch(const Tensor& batch) const;

  ModelConfig config_;
  int num_classes_ = 0;
  std::unique_ptr<InferenceBackend> backend_;
};

}  // namespace tessera
