// Engine: a loaded model ready to run batches. This first version runs the float32 host
// reference path; the int8 fabric + host pipeline replaces its inside, not its interface.
#pragma once

#include <memory>
#include <vector>

#include "accel/common/status.h"
#include "accel/graph/graph.h"
#include "accel/graph/tensor.h"
#include "accel/runtime/model_config.h"

namespace tessera {

class Engine {
 public:
  // Imports config.file (ONNX), validates the graph and checks that it takes one
  // C x H x W input matching config.input and yields one score vector per image.
  static Result<std::unique_ptr<Engine>> load(const ModelConfig& config);

  const ModelConfig& config() const { return config_; }
  const Graph& graph() const { return graph_; }
  int num_classes() const { return num_classes_; }

  // Runs a batch (N x C x H x W, preprocessed) and returns the raw model outputs (logits),
  // one row of num_classes() per image. Thread-safe.
  Result<std::vector<std::vector<float>>> run(const Tensor& batch) const;

  // run() followed by softmax over each row (unless the graph already ends with a Softmax).
  Result<std::vector<std::vector<float>>> classify(const Tensor& batch) const;

 private:
  Engine(ModelConfig config, Graph graph, int num_classes);

  ModelConfig config_;
  Graph graph_;
  int num_classes_ = 0;
  bool ends_with_softmax_ = false;
};

}  // namespace tessera
