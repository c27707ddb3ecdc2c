// The fp32 backend: the whole graph on the host's float reference path, with BatchNorm folded
// into the convs (as the int8 path does and OpenCV does) and the kernels' per-model data
// (oneDNN's reordered weights) in a cache that lives and dies with that graph. Internal to
// accel/runtime (Engine::load makes it).
#pragma once

#include <memory>
#include <string>

#include "accel/graph/graph.h"
#include "accel/host/model_cache.h"
#include "accel/runtime/inference_backend.h"

namespace tessera {

class Fp32Backend final : public InferenceBackend {
 public:
  static Result<std::unique_ptr<Fp32Backend>> create(Graph graph, int num_classes);

  Result<Inference> infer(const Tensor& batch, BatchListener* listener) const override;
  size_t instance_count() const override { return 1; }
  void to_probabilities(std::vector<std::vector<float>>& rows) const override;
  Precision precision() const override { return Precision::kFp32; }
  const std::string& summary() const override { return summary_; }

 private:
  Fp32Backend() = default;
  Result<Inference> run(const Tensor& batch) const;

  Graph graph_;
  int num_classes_ = 0;
  bool ends_with_softmax_ = false;
  std::string summary_;
  std::unique_ptr<host::ModelCache> cache_;
};

}  // namespace tessera
