#include "accel/runtime/backend_fp32.h"

#include <chrono>

#include "accel/graph/passes.h"
#include "accel/host/reference_executor.h"

namespace tessera {

Result<std::unique_ptr<Fp32Backend>> Fp32Backend::create(Graph graph, int num_classes) {
  std::unique_ptr<Fp32Backend> backend(new Fp32Backend());
  backend->ends_with_softmax_ = graph_ends_with_softmax(graph);
  backend->graph_ = std::move(graph);
  backend->num_classes_ = num_classes;
  fold_constant_identities(backend->graph_);
  TESSERA_RETURN_IF_ERROR(fold_batch_norm(backend->graph_).status());
  backend->cache_ = std::make_unique<host::ModelCache>();
  backend->summary_ = "fp32: " + std::to_string(backend->graph_.nodes.size()) + " nodes on the host";
  return backend;
}

Result<Inference> Fp32Backend::run(const Tensor& batch) const {
  const auto start = std::chrono::steady_clock::now();
  TESSERA_ASSIGN_OR_RETURN(auto outputs, host::run_reference(graph_, {{graph_.inputs[0].name, batch}}, cache_.get()));
  Inference result;
  result.host_us = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count());
  TESSERA_ASSIGN_OR_RETURN(result.scores, split_rows(outputs.at(graph_.outputs[0].name), batch.dim(0), num_classes_));
  return result;
}

Result<Inference> Fp32Backend::infer(const Tensor& batch, BatchListener* listener) const {
  Result<Inference> result = run(batch);
  if (listener) listener->device_free();
  return result;
}

void Fp32Backend::to_probabilities(std::vector<std::vector<float>>& rows) const {
  softmax_rows(rows, ends_with_softmax_);
}

}  // namespace tessera
