// Multiply-adds per image of the nodes that have them (Conv, Gemm, MatMul): what `tessera plan`
// and the load line count as a model's work when they say how much of it runs on the fabric.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "accel/graph/graph.h"

namespace tessera::plan {

// The node's multiply-adds for one image of the batch-1 `shapes`; 0 for nodes without any.
uint64_t node_macs(const Graph& graph, const Node& node, const std::map<std::string, Shape>& shapes);

}  // namespace tessera::plan
