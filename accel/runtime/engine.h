// Engine: a loaded model ready to run batches. Two precisions:
//  - fp32: the whole graph on the host's float reference path;
//  - int8: the compiled fabric part (conv/pool/add/concat, kernels/kernel_abi.h) on a Device
//    (the emulator or a board), the rest (FC, softmax, ...) on the host in float, as two
//    pipeline stages: the fabric stage on the instance's own thread, the host stage on the
//    caller's thread once its batch left the fabric, so batch i's convolutions overlap batch
//    i-1's FC layers (NEURAghe's software pipeline, seeds/003) with one hand-off each way.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "accel/common/status.h"
#include "accel/device/device.h"
#include "accel/graph/graph.h"
#include "accel/graph/tensor.h"
#include "accel/host/model_cache.h"
#include "accel/plan/model_plan.h"
#include "accel/plan/plan_cache.h"
#include "accel/runtime/device_supervisor.h"
#include "accel/runtime/model_config.h"

namespace tessera {

enum class Precision { kFp32, kInt8 };
const char* precision_name(Precision p);
Result<Precision> parse_precision(const std::string& name);

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
};

// One batch's answer: raw scores (logits) per image and where the time went.
struct Inference {
  std::vector<std::vector<float>> scores;
  uint64_t fabric_us = 0;          // measured time of the fabric stage (device run + int8 I/O)
  uint64_t host_us = 0;            // measured time of the host stage
  uint64_t fabric_cycles = 0;      // device cycles (modelled on the emulator)
  uint64_t modeled_fabric_us = 0;  // fabric_cycles at the device's clock (0 when unknown)
  double modeled_fabric_uj = 0;    // the plan's fabric energy for the batch (0 when unknown)
  int device = -1;                 // index of the device instance that ran it (-1: the host alone)
};

class Engine {
 public:
  static Result<std::unique_ptr<Engine>> load(const ModelConfig& config, const EngineOptions& options = {});
  ~Engine();

  const ModelConfig& config() const { return config_; }
  const Graph& graph() const { return graph_; }
  int num_classes() const { return num_classes_; }
  Precision precision() const { return options_.precision; }
  // What runs where, e.g. "int8: 6 fabric layers (...) on emu; host: Flatten Gemm Relu Gemm".
  const std::string& summary() const { return summary_; }
  // int8: the fabric part's tile plan on the device's board (null for fp32 or no fabric layer).
  const plan::ModelPlan* plan() const;
  // int8: the health of each device instance the model runs on, in order (empty for fp32).
  std::vector<const DeviceSupervisor*> instances() const;

  // Runs a batch (N x C x H x W, preprocessed). Thread-safe; concurrent callers share the
  // pipeline, so their batches overlap stage by stage. int8: `fabric_done` (if set) is called on
  // the caller's thread when the batch's fabric stage is over and its host stage begins (the
  // device can take the next batch); not called when there is no fabric stage (fp32) or the
  // batch failed before its fabric stage ended; may be called again if an instance failed the
  // batch and another one runs it.
  Result<Inference> infer(const Tensor& batch, const std::function<void()>& fabric_done = {}) const;
  // The device instances a batch can run on at once (1 for fp32: the host).
  size_t device_instances() const { return int8_.empty() ? 1 : int8_.size(); }

  // Raw outputs (logits), one row of num_classes() per image.
  Result<std::vector<std::vector<float>>> run(const Tensor& batch) const;
  // run() followed by softmax over each row (unless the graph already ends with a Softmax).
  Result<std::vector<std::vector<float>>> classify(const Tensor& batch) const;

  // Softmax over each row in place (no-op when the graph ends with a Softmax).
  void to_probabilities(std::vector<std::vector<float>>& rows) const;

  struct Int8Path;  // the compiled fabric part and its pipeline (engine_int8.cc)

 private:
  Engine(ModelConfig config, Graph graph, int num_classes, EngineOptions options);
  Status check_batch(const Tensor& batch) const;
  // int8: runs the batch on the instance with the least outstanding work; when that instance
  // fails it (UNAVAILABLE: its device failed or is out of service), on the next one.
  Result<Inference> infer_on_instances(const Tensor& batch, const std::function<void()>& fabric_done) const;
  // The untried usable instance to run on next (serving before recovering, then least
  // outstanding work, ties taken in turn); -1 when none is left.
  int pick_instance(const std::vector<bool>& tried) const;

  ModelConfig config_;
  Graph graph_;
  int num_classes_ = 0;
  bool ends_with_softmax_ = false;
  EngineOptions options_;
  std::string summary_;
  std::unique_ptr<host::ModelCache> host_cache_;    // fp32: what the host kernels keep for graph_
  std::vector<std::unique_ptr<Int8Path>> int8_;     // one per device instance
  mutable std::atomic<unsigned> next_instance_{0};  // where the tie-break among instances starts
};

}  // namespace tessera
