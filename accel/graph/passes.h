// Graph rewrites that keep the float semantics: they run before quantisation and compilation.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "accel/common/status.h"
#include "accel/graph/graph.h"

namespace tessera {

// For each tensor, the indices of the nodes that read it (graph outputs are not counted).
std::map<std::string, std::vector<size_t>> tensor_consumers(const Graph& graph);

// Replaces Identity nodes that copy a constant (exporters emit them for de-duplicated weights)
// by the constant under the node's output name. Returns how many were folded.
int fold_constant_identities(Graph& graph);

// Folds every BatchNormalization that directly follows a Conv (the conv's only consumer, all
// operands constant) into the conv's weights and bias: W' = W * g, b' = (b - mean) * g + beta,
// g = scale / sqrt(var + eps). Returns how many were folded.
Result<int> fold_batch_norm(Graph& graph);

}  // namespace tessera
