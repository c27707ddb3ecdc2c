#include "accel/runtime/engine.h"

#include <algorithm>

#include "accel/runtime/backend_fp32.h"
#include "accel/runtime/backend_int8.h"
#include "accel/runtime/model_import.h"

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

Engine::Engine(ModelConfig config, int num_classes) : config_(std::move(config)), num_classes_(num_classes) {}

Engine::~Engine() = default;

Result<std::unique_ptr<Engine>> Engine::load(const ModelConfig& config, const EngineOptions& options) {
  auto graph = import_model(config);
  if (!graph) return Status(graph.status().code(), model_error_prefix(config) + graph.status().message());
  TESSERA_ASSIGN_OR_RETURN(int classes, check_signature(config, *graph));
  if (options.max_batch < 1) return Status::invalid_argument("max_batch must be at least 1");
  std::unique_ptr<Engine> engine(new Engine(config, classes));
  if (options.precision == Precision::kFp32) {
    // The backend keeps the graph (its constants are the model's weights): no second copy here.
    TESSERA_ASSIGN_OR_RETURN(engine->backend_, Fp32Backend::create(std::move(graph).value(), classes));
    return engine;
  }
  auto int8 = Int8Backend::create(engine->config_, *graph, options);
  if (!int8) return Status(int8.status().code(), model_error_prefix(config) + int8.status().message());
  engine->backend_ = std::move(int8).value();
  return engine;
}

Status Engine::check_batch(const Tensor& batch) const {
  const PreprocessConfig& in = config_.input;
  if (batch.rank() != 4 || batch.dim(0) < 1 || batch.dim(1) != in.channels || batch.dim(2) != in.height ||
      batch.dim(3) != in.width) {
    return Status::invalid_argument(model_error_prefix(config_) + "input batch " + shape_to_string(batch.shape) +
                                    " does not match the model's N x " + std::to_string(in.channels) + " x " +
                                    std::to_string(in.height) + " x " + std::to_string(in.width));
  }
  return Status::ok();
}

Result<Inference> Engine::infer(const Tensor& batch, BatchListener* listener) const {
  if (Status checked = check_batch(batch); !checked.is_ok()) {
    if (listener) listener->device_free();
    return checked;
  }
  return backend_->infer(batch, listener);
}

Result<std::vector<std::vector<float>>> Engine::run(const Tensor& batch) const {
  TESSERA_ASSIGN_OR_RETURN(Inference inference, infer(batch));
  return std::move(inference.scores);
}

Result<std::vector<std::vector<float>>> Engine::classify(const Tensor& batch) const {
  TESSERA_ASSIGN_OR_RETURN(auto rows, run(batch));
  to_probabilities(rows);
  return rows;
}

}  // namespace tessera
