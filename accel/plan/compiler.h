// The compiler: float graph + activation ranges -> a CompiledProgram for the fabric part
// (int8 descriptors, weights, quantisation arrays, arena layout, tiles) and a float graph for
// the host part that reads the fabric's dequantised output.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "accel/common/status.h"
#include "accel/graph/graph.h"
#include "accel/plan/model_plan.h"
#include "accel/plan/plan_cache.h"
#include "accel/program/program.h"

namespace tessera::plan {

struct CompiledModel {
  bool has_fabric = false;               // false: everything runs on the host in float
  CompiledProgram program;               // the fabric part (when has_fabric)
  std::vector<std::string> layer_names;  // one per descriptor, for errors and reports
  Graph host_graph;                      // input: the fabric output (or the graph input); the graph's outputs
  std::string fabric_summary;            // "12 fabric layers (conv1 .. pool3); host: Flatten, Gemm, Relu, Gemm"
  ModelPlan plan;                        // the tile plan behind the descriptors' tiles (when has_fabric)
  bool plan_from_cache = false;          // the plan's choices came from the PlanCache
};

struct CompileOptions {
  BoardProfile board;          // the board the tiles are planned for
  PlanOptions plan;            // space must be kKernel: the descriptors get the tiles
  PlanCache* cache = nullptr;  // optional
  std::string model_name;      // the cache's file name part
};

// `graph` must have BatchNorm folded (fold_batch_norm) and one NCHW input. `ranges` holds the
// calibrated range of the graph input and of every node output (quant::calibrate_ranges).
// Conv tiles come from the planner's search on options.board, pool/add tiles from choose_tiles.
Result<CompiledModel> compile_model(const Graph& graph, const std::map<std::string, float>& ranges,
                                    const CompileOptions& options);

// A range of 1 for the graph input and every node output: enough to compile for planning
// (shapes, tiles, costs), not to run (the scales are meaningless).
std::map<std::string, float> unit_ranges(const Graph& graph);

// Tiles of pool and add layers (and a conv's starting point): the largest channel tiles the
// grouping allows, then the largest row/column tiles that fit abi::layer_fits.
Status choose_tiles(abi::LayerDesc& desc);

}  // namespace tessera::plan
