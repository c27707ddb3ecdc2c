// The compiler: float graph + activation ranges -> the partition's segments in order: a
// CompiledProgram for each fabric segment (int8 descriptors, weights, quantisation arrays, arena
// layout, tiles) and a float graph for each host segment, which reads the dequantised outputs of
// the fabric segments before it. One tile plan covers every fabric layer and the hand-overs.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "accel/common/status.h"
#include "accel/graph/graph.h"
#include "accel/plan/model_plan.h"
#include "accel/plan/partition.h"
#include "accel/plan/placement.h"
#include "accel/plan/plan_cache.h"
#include "accel/program/program.h"

namespace tessera::plan {

// One segment of the compiled model (partition.h), in graph order.
struct CompiledSegment {
  bool fabric = false;
  // Fabric: the program, its layers' names, where its layers start in the plan, the tensor it
  // reads (quantised at program.input_scale) and the names later segments read its output under.
  CompiledProgram program;
  std::vector<std::string> layer_names;
  size_t first_layer = 0;
  std::string input;
  std::vector<std::string> output_names;
  // Host: a float graph whose inputs are the tensors it reads from earlier segments (or the
  // graph input) and whose outputs are those later segments or the caller read.
  Graph graph;
};

struct CompiledModel {
  bool has_fabric = false;                // false: everything runs on the host in float
  std::string input;                      // the graph input, which the first segment reads
  std::vector<CompiledSegment> segments;  // in order; one host segment when there is no fabric
  std::vector<std::string> layer_names;   // every fabric layer, in plan order
  std::string fabric_summary;  // "12 fabric layers (conv1 .. pool3) in 2 segments, 1 hand-over; host: LRN Flatten Gemm"
  ModelPlan plan;              // the tile plan of every fabric layer, and the hand-overs
  bool plan_from_cache = false;  // the plan's choices came from the PlanCache
  Placement placement;           // MAC share, hand-overs, host ops' modeled time

  // Every fabric segment's descriptors, in plan order.
  std::vector<abi::LayerDesc> fabric_layers() const;
  size_t fabric_segments() const;
  size_t handovers() const { return plan.handovers.size(); }
};

struct CompileOptions {
  BoardProfile board;          // the board the tiles are planned for
  PlanOptions plan;            // space must be kKernel: the descriptors get the tiles
  PlanCache* cache = nullptr;  // optional
  std::string model_name;      // the cache's file name part
  PartitionOptions partition;  // test and tuning hooks of the split
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
