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

// Replaces each exporter's LayerNorm chain (opsets below 17: ReduceMean, Sub, Pow 2, ReduceMean,
// Add epsilon, Sqrt, Div, and an optional Mul by a constant scale and Add of a constant bias) over
// trailing dims by one LayerNormalization node; intermediate results read elsewhere keep the chain.
// Returns how many were fused.
Result<int> fuse_layer_norm(Graph& graph);

// Replaces each exporter's exact-GELU chain (Div by sqrt(2) or Mul by 1/sqrt(2), Erf, Add 1,
// Mul by the input, Mul by 0.5, the two Muls in either order) by one Gelu node. Returns how many.
Result<int> fuse_gelu(Graph& graph);

}  // namespace tessera
