// The float32 reference executor: runs a Graph node by node with the reference kernels of
// reference_ops.h. It is the "reference twin" later optimised paths are checked against.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "accel/common/status.h"
#include "accel/graph/graph.h"
#include "accel/graph/tensor.h"
#include "accel/host/model_cache.h"

namespace tessera::host {

// Runs `graph` on `inputs` (one tensor per graph input, by name; dim 0 is the batch) and returns
// the graph outputs by name. Errors name the node that failed. Thread-safe. `cache`, when given,
// belongs to this graph (model_cache.h: made for it, living no longer than its constants) and
// keeps what the kernels derive from the constants (oneDNN's weights) from one call to the next.
//
// `node_seconds`, when given, receives each node's wall time by node index (a Relu or Clip run
// inside the op before it counts for that op; its own entry stays 0). Such a run goes whole on the
// caller's thread, without the batch split, so a node's time is its own.
using NodeSeconds = std::vector<double>;
Result<std::map<std::string, Tensor>> run_reference(const Graph& graph, const std::map<std::string, Tensor>& inputs,
                                                    ModelCache* cache = nullptr, NodeSeconds* node_seconds = nullptr);

}  // namespace tessera::host
