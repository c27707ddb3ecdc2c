#include "accel/runtime/plan_model.h"

#include <algorithm>

#include "accel/graph/passes.h"
#include "accel/import/onnx/onnx_importer.h"
#include "accel/runtime/host_op_timing.h"
#include "accel/runtime/model_config.h"
#include "accel/runtime/model_import.h"

namespace tessera {

Result<ModelPlanning> plan_model(const std::filesystem::path& model, const plan::BoardProfile& board,
                                 const plan::PlanOptions& options, plan::PlanCache* cache) {
  ModelPlanning out;
  std::filesystem::path file = model;
  out.model_name = model.stem().string();
  Result<Graph> imported = Status::internal("not imported");
  if (std::filesystem::is_directory(model)) {
    TESSERA_ASSIGN_OR_RETURN(ModelConfig config, load_model_config(model));
    file = config.file;
    out.model_name = config.name;
    imported = import_model(config);
  } else {
    imported = import_onnx_file(file);
  }
  if (!imported) return Status(imported.status().code(), file.string() + ": " + imported.status().message());
  Graph graph = std::move(imported).value();
  fold_constant_identities(graph);
  TESSERA_RETURN_IF_ERROR(fold_batch_norm(graph).status());
  plan::CompileOptions compile{board, options, cache, out.model_name, {}};
  compile.plan.space = plan::SearchSpace::kKernel;
  TESSERA_ASSIGN_OR_RETURN(out.compiled, plan::compile_model(graph, plan::unit_ranges(graph), compile));
  out.fabric_summary = out.compiled.fabric_summary;
  // The host ops measured here, on an image of zeros (their time does not depend on the values),
  // when the input's shape is known past the batch.
  Shape input = graph.inputs.empty() ? Shape{} : graph.inputs[0].shape;
  if (!input.empty() && std::all_of(input.begin() + 1, input.end(), [](int64_t d) { return d > 0; })) {
    input[0] = 1;
    TESSERA_RETURN_IF_ERROR(measure_host_ops(graph, Tensor(input), out.compiled.placement));
  }
  if (options.space == plan::SearchSpace::kExplore && out.compiled.has_fabric) {
    const std::vector<plan::HandoverPlan> kernel_handovers = out.compiled.plan.handovers;
    TESSERA_ASSIGN_OR_RETURN(out.compiled.plan,
                             plan::plan_layers_cached(out.compiled.fabric_layers(), out.compiled.layer_names, board,
                                                      options, out.model_name, cache, &out.compiled.plan_from_cache));
    // The explore plan studies the layers; the hand-overs are the same round trips.
    for (const plan::HandoverPlan& h : kernel_handovers)
      out.compiled.plan.add_handover(h.from, h.to, h.bytes_out, h.bytes_in);
  }
  return out;
}

}  // namespace tessera
