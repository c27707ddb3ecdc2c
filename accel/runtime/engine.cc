#include "accel/runtime/engine.h"

#include <algorithm>
#include <cmath>

#include "accel/graph/passes.h"
#include "accel/host/reference_executor.h"
#include "accel/runtime/engine_int8.h"
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

const char* precision_name(Precision p) { return p == Precision::kInt8 ? "int8" : "fp32"; }

Result<Precision> parse_precision(const std::string& name) {
  if (name == "int8") return Precision::kInt8;
  if (name == "fp32") return Precision::kFp32;
  return Status::invalid_argument("precision must be int8 or fp32, not '" + name + "'");
}

Engine::Engine(ModelConfig config, Graph graph, int num_classes, EngineOptions options)
    : config_(std::move(config)), graph_(std::move(graph)), num_classes_(num_classes), options_(std::move(options)) {
  for (const Node& node : graph_.nodes) {
    if (node.outputs[0] == graph_.outputs[0].name) ends_with_softmax_ = node.op == OpKind::kSoftmax;
  }
  options_.calibration_samples.clear();  // only needed while loading
}

Engine::~Engine() = default;

Result<std::unique_ptr<Engine>> Engine::load(const ModelConfig& config, const EngineOptions& options) {
  auto graph = import_model(config);
  if (!graph) return Status(graph.status().code(), model_error_prefix(config) + graph.status().message());
  TESSERA_ASSIGN_OR_RETURN(int classes, check_signature(config, *graph));
  if (options.max_batch < 1) return Status::invalid_argument("max_batch must be at least 1");
  std::unique_ptr<Engine> engine(new Engine(config, std::move(graph).value(), classes, options));
  if (options.precision == Precision::kFp32) {
    // The fp32 path runs its own copy of the graph with each BatchNorm folded into the conv before
    // it (as the int8 path does and OpenCV does), and keeps the kernels' per-model data (oneDNN's
    // reordered weights) in a cache that lives and dies with that graph.
    fold_constant_identities(engine->graph_);
    TESSERA_RETURN_IF_ERROR(fold_batch_norm(engine->graph_).status());
    engine->host_cache_ = std::make_unique<host::ModelCache>();
    engine->summary_ = "fp32: " + std::to_string(engine->graph_.nodes.size()) + " nodes on the host";
    return engine;
  }
  EngineOptions first_options = options;
  if (!options.instances.empty()) {
    first_options.supervisor = options.instances.front();
    first_options.device = first_options.supervisor->shared_device();
  }
  auto int8 = Int8Path::create(engine->config_, engine->graph_, first_options);
  if (!int8) return Status(int8.status().code(), model_error_prefix(config) + int8.status().message());
  engine->int8_.push_back(std::move(int8).value());
  for (size_t i = 1; i < options.instances.size(); ++i) {
    auto more = Int8Path::create_instance(*engine->int8_.front(), options.instances[i]);
    if (!more) return Status(more.status().code(), model_error_prefix(config) + more.status().message());
    engine->int8_.push_back(std::move(more).value());
  }
  engine->summary_ = "int8: " + engine->int8_.front()->summary();
  if (engine->int8_.size() > 1) engine->summary_ += " x " + std::to_string(engine->int8_.size()) + " device instances";
  return engine;
}

const plan::ModelPlan* Engine::plan() const { return int8_.empty() ? nullptr : int8_.front()->plan(); }

std::vector<const DeviceSupervisor*> Engine::instances() const {
  std::vector<const DeviceSupervisor*> out;
  for (const auto& path : int8_) out.push_back(&path->supervisor());
  return out;
}

int Engine::pick_instance(const std::vector<bool>& tried) const {
  const size_t n = int8_.size();
  const size_t start = next_instance_.fetch_add(1, std::memory_order_relaxed) % n;
  int best = -1;
  std::pair<bool, int> best_key{true, 0};  // (not serving, outstanding): smaller is better
  for (size_t k = 0; k < n; ++k) {
    const size_t i = (start + k) % n;
    const DeviceSupervisor& supervisor = int8_[i]->supervisor();
    if (tried[i] || !supervisor.usable().is_ok()) continue;
    const std::pair<bool, int> key{supervisor.health().state != DeviceState::kServing,
                                   int8_[i]->outstanding.load(std::memory_order_relaxed)};
    if (best < 0 || key < best_key) {
      best = static_cast<int>(i);
      best_key = key;
    }
  }
  return best;
}

Result<Inference> Engine::infer_on_instances(const Tensor& batch, const std::function<void()>& fabric_done) const {
  if (int8_.size() == 1) return int8_.front()->infer(batch, fabric_done);
  std::vector<bool> tried(int8_.size(), false);
  Result<Inference> result =
      Status::unavailable(model_error_prefix(config_) + "every device instance is out of service");
  for (int i = pick_instance(tried); i >= 0; i = pick_instance(tried)) {
    tried[static_cast<size_t>(i)] = true;
    Int8Path& path = *int8_[static_cast<size_t>(i)];
    path.outstanding.fetch_add(1);
    result = path.infer(batch, fabric_done);
    path.outstanding.fetch_sub(1);
    // The instance's device failed (or went out of service): the batch is not at fault.
    if (result.is_ok() || result.status().code() != StatusCode::kUnavailable) return result;
  }
  return result;
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

Result<Inference> Engine::infer(const Tensor& batch, const std::function<void()>& fabric_done) const {
  TESSERA_RETURN_IF_ERROR(check_batch(batch));
  if (!int8_.empty()) return infer_on_instances(batch, fabric_done);
  const auto start = std::chrono::steady_clock::now();
  TESSERA_ASSIGN_OR_RETURN(auto outputs,
                           host::run_reference(graph_, {{graph_.inputs[0].name, batch}}, host_cache_.get()));
  Inference result;
  result.host_us = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count());
  TESSERA_ASSIGN_OR_RETURN(result.scores, split_rows(outputs.at(graph_.outputs[0].name), batch.dim(0), num_classes_));
  return result;
}

Result<std::vector<std::vector<float>>> Engine::run(const Tensor& batch) const {
  TESSERA_ASSIGN_OR_RETURN(Inference inference, infer(batch));
  return std::move(inference.scores);
}

void Engine::to_probabilities(std::vector<std::vector<float>>& rows) const {
  if (ends_with_softmax_) return;
  for (auto& row : rows) {
    const float max = *std::max_element(row.begin(), row.end());
    double sum = 0;
    for (float& v : row) sum += (v = std::exp(v - max));
    for (float& v : row) v = static_cast<float>(v / sum);
  }
}

Result<std::vector<std::vector<float>>> Engine::classify(const Tensor& batch) const {
  TESSERA_ASSIGN_OR_RETURN(auto rows, run(batch));
  to_probabilities(rows);
  return rows;
}

Result<std::vector<std::vector<float>>> split_rows(const Tensor& scores, int64_t n, int classes) {
  const auto k = static_cast<size_t>(classes);
  if (scores.data.size() != static_cast<size_t>(n) * k) {
    return Status::internal("model output " + shape_to_string(scores.shape) + " is not " + std::to_string(n) + " x " +
                            std::to_string(classes));
  }
  std::vector<std::vector<float>> rows(static_cast<size_t>(n));
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i].assign(scores.data.begin() + static_cast<std::ptrdiff_t>(i * k),
                   scores.data.begin() + static_cast<std::ptrdiff_t>((i + 1) * k));
  }
  return rows;
}

}  // namespace tessera
