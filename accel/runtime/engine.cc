#include "accel/runtime/engine.h"

#include <algorithm>
#include <cmath>

#include "accel/host/reference_executor.h"
#include "accel/import/onnx/onnx_importer.h"

namespace tessera {
namespace {

std::string model_error_prefix(const ModelConfig& config) { return "model '" + config.name + "': "; }

// The model must take one N x C x H x W float input matching model.toml and give N x K scores.
Result<int> check_signature(const ModelConfig& config, const Graph& graph) {
  const std::string where = model_error_prefix(config);
  if (graph.inputs.size() != 1 || graph.outputs.size() != 1) {
    return Status::invalid_argument(where + "the graph must have exactly one input and one output, it has " +
                                    std::to_string(graph.inputs.size()) + " and " +
                                    std::to_string(graph.outputs.size()));
  }
  const Shape& in = graph.inputs[0].shape;
  const Shape want{config.input.channels, config.input.height, config.input.width};
  if (in.size() != 4 || !std::equal(want.begin(), want.end(), in.begin() + 1)) {
    return Status::invalid_argument(where + "the graph input " + shape_to_string(in) +
                                    " does not match model.toml's [input] (N," + std::to_string(want[0]) + "," +
                                    std::to_string(want[1]) + "," + std::to_string(want[2]) + ")");
  }
  TESSERA_ASSIGN_OR_RETURN(auto shapes, infer_shapes(graph, 1));
  const Shape& out = shapes.at(graph.outputs[0].name);
  if (out.size() != 2 || out[0] != 1) {
    return Status::invalid_argument(where + "the graph output must be N x classes, it is " + shape_to_string(out));
  }
  const int classes = static_cast<int>(out[1]);
  if (static_cast<int>(config.labels.size()) != classes) {
    return Status::invalid_argument(where + "the labels file has " + std::to_string(config.labels.size()) +
                                    " labels but the model has " + std::to_string(classes) + " classes");
  }
  return classes;
}

}  // namespace

Engine::Engine(ModelConfig config, Graph graph, int num_classes)
    : config_(std::move(config)), graph_(std::move(graph)), num_classes_(num_classes) {
  for (const Node& node : graph_.nodes) {
    if (node.outputs[0] == graph_.outputs[0].name) ends_with_softmax_ = node.op == OpKind::kSoftmax;
  }
}

Result<std::unique_ptr<Engine>> Engine::load(const ModelConfig& config) {
  auto graph = import_onnx_file(config.file);
  if (!graph) return Status(graph.status().code(), model_error_prefix(config) + graph.status().message());
  TESSERA_ASSIGN_OR_RETURN(int classes, check_signature(config, *graph));
  return std::unique_ptr<Engine>(new Engine(config, std::move(graph).value(), classes));
}

Result<std::vector<std::vector<float>>> Engine::run(const Tensor& batch) const {
  const PreprocessConfig& in = config_.input;
  if (batch.rank() != 4 || batch.dim(0) < 1 || batch.dim(1) != in.channels || batch.dim(2) != in.height ||
      batch.dim(3) != in.width) {
    return Status::invalid_argument(model_error_prefix(config_) + "input batch " + shape_to_string(batch.shape) +
                                    " does not match the model's N x " + std::to_string(in.channels) + " x " +
                                    std::to_string(in.height) + " x " + std::to_string(in.width));
  }
  TESSERA_ASSIGN_OR_RETURN(auto outputs, host::run_reference(graph_, {{graph_.inputs[0].name, batch}}));
  const Tensor& scores = outputs.at(graph_.outputs[0].name);
  const auto n = static_cast<size_t>(batch.dim(0));
  const auto k = static_cast<size_t>(num_classes_);
  if (scores.data.size() != n * k) {
    return Status::internal(model_error_prefix(config_) + "output " + shape_to_string(scores.shape) +
                            " is not N x classes");
  }
  std::vector<std::vector<float>> rows(n);
  for (size_t i = 0; i < n; ++i) rows[i].assign(scores.data.begin() + static_cast<std::ptrdiff_t>(i * k),
                                                scores.data.begin() + static_cast<std::ptrdiff_t>((i + 1) * k));
  return rows;
}

Result<std::vector<std::vector<float>>> Engine::classify(const Tensor& batch) const {
  TESSERA_ASSIGN_OR_RETURN(auto rows, run(batch));
  if (ends_with_softmax_) return rows;
  for (auto& row : rows) {
    const float max = *std::max_element(row.begin(), row.end());
    double sum = 0;
    for (float& v : row) sum += (v = std::exp(v - max));
    for (float& v : row) v = static_cast<float>(v / sum);
  }
  return rows;
}

}  // namespace tessera
