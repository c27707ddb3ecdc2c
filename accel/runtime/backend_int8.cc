#include "accel/runtime/backend_int8.h"

namespace tessera {

Result<std::unique_ptr<Int8Backend>> Int8Backend::create(const ModelConfig& config, const Graph& graph,
                                                         const EngineOptions& options) {
  std::unique_ptr<Int8Backend> backend(new Int8Backend());
  backend->model_name_ = config.name;
  backend->ends_with_softmax_ = graph_ends_with_softmax(graph);
  EngineOptions first_options = options;
  if (!options.instances.empty()) {
    first_options.supervisor = options.instances.front();
    first_options.device = first_options.supervisor->shared_device();
  }
  TESSERA_ASSIGN_OR_RETURN(auto first, Int8Path::create(config, graph, first_options));
  backend->paths_.push_back(std::move(first));
  for (size_t i = 1; i < options.instances.size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(auto more, Int8Path::create_instance(*backend->paths_.front(), options.instances[i]));
    backend->paths_.push_back(std::move(more));
  }
  backend->summary_ = "int8: " + backend->paths_.front()->summary();
  if (backend->paths_.size() > 1) {
    backend->summary_ += " x " + std::to_string(backend->paths_.size()) + " device instances";
  }
  return backend;
}

Int8Backend::~Int8Backend() = default;

std::vector<const DeviceSupervisor*> Int8Backend::instances() const {
  std::vector<const DeviceSupervisor*> out;
  for (const auto& path : paths_) out.push_back(&path->supervisor());
  return out;
}

void Int8Backend::to_probabilities(std::vector<std::vector<float>>& rows) const {
  softmax_rows(rows, ends_with_softmax_);
}

int Int8Backend::pick_instance(const std::vector<bool>& tried) const {
  const size_t n = paths_.size();
  const size_t start = next_instance_.fetch_add(1, std::memory_order_relaxed) % n;
  int best = -1;
  std::pair<bool, int> best_key{true, 0};  // (not serving, outstanding): smaller is better
  for (size_t k = 0; k < n; ++k) {
    const size_t i = (start + k) % n;
    const DeviceSupervisor& supervisor = paths_[i]->supervisor();
    if (tried[i] || !supervisor.usable().is_ok()) continue;
    const std::pair<bool, int> key{supervisor.health().state != DeviceState::kServing,
                                   paths_[i]->outstanding.load(std::memory_order_relaxed)};
    if (best < 0 || key < best_key) {
      best = static_cast<int>(i);
      best_key = key;
    }
  }
  return best;
}

Result<Inference> Int8Backend::infer_on_instances(const Tensor& batch,
                                                  const std::function<void()>& first_fabric_done) const {
  if (paths_.size() == 1) return paths_.front()->infer(batch, first_fabric_done);
  std::vector<bool> tried(paths_.size(), false);
  Result<Inference> result =
      Status::unavailable("model '" + model_name_ + "': every device instance is out of service");
  for (int i = pick_instance(tried); i >= 0; i = pick_instance(tried)) {
    tried[static_cast<size_t>(i)] = true;
    Int8Path& path = *paths_[static_cast<size_t>(i)];
    path.outstanding.fetch_add(1);
    result = path.infer(batch, first_fabric_done);
    path.outstanding.fetch_sub(1);
    // The instance's device failed (or went out of service): the batch is not at fault.
    if (result.is_ok() || result.status().code() != StatusCode::kUnavailable) return result;
  }
  return result;
}

Result<Inference> Int8Backend::infer(const Tensor& batch, BatchListener* listener) const {
  // The listener hears once: when the first fabric segment is over on the instance that runs
  // the batch to its end (a failed instance's segment may have told it already), or at the end.
  bool told = false;
  auto tell = [&] {
    if (told || !listener) return;
    told = true;
    listener->device_free();
  };
  Result<Inference> result = infer_on_instances(batch, tell);
  tell();
  return result;
}

}  // namespace tessera
