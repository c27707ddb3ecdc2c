// The int8 backend: the compiled model's fabric and host segments (partition.h) on one or more
// device instances (an instance group), each with its own programs, pipeline and health
// (engine_int8.h). Planned once, for the first instance's board; each batch goes to the
// instance with the least outstanding work, and to the next one when its instance fails it.
// Internal to accel/runtime (Engine::load makes it).
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "accel/runtime/engine.h"
#include "accel/runtime/engine_int8.h"
#include "accel/runtime/inference_backend.h"

namespace tessera {

class Int8Backend final : public InferenceBackend {
 public:
  static Result<std::unique_ptr<Int8Backend>> create(const ModelConfig& config, const Graph& graph,
                                                     const EngineOptions& options);
  ~Int8Backend() override;

  Result<Inference> infer(const Tensor& batch, BatchListener* listener) const override;
  size_t instance_count() const override { return paths_.size(); }
  void to_probabilities(std::vector<std::vector<float>>& rows) const override;
  Precision precision() const override { return Precision::kInt8; }
  const std::string& summary() const override { return summary_; }
  const plan::ModelPlan* plan() const override { return paths_.front()->plan(); }
  const plan::Placement* placement() const override { return &paths_.front()->compiled().placement; }
  std::vector<const DeviceSupervisor*> instances() const override;
  const plan::CompiledModel& compiled() const { return paths_.front()->compiled(); }

 private:
  Int8Backend() = default;
  // The untried usable instance to run on next (serving before recovering, then least
  // outstanding work, ties taken in turn); -1 when none is left.
  int pick_instance(const std::vector<bool>& tried) const;
  Result<Inference> infer_on_instances(const Tensor& batch, const std::function<void()>& first_fabric_done) const;

  std::string model_name_;
  bool ends_with_softmax_ = false;
  std::string summary_;
  std::vector<std::unique_ptr<Int8Path>> paths_;    // one per device instance
  mutable std::atomic<unsigned> next_instance_{0};  // where the tie-break among instances starts
};

}  // namespace tessera
