// Conversion of one ONNX NodeProto into a typed IR Node.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "accel/common/status.h"
#include "accel/graph/graph.h"
#include "onnx.pb.h"

namespace tessera::onnx_import {

// What node conversion may look up: the opset, and constant tensors (initializers and folded
// Constant nodes) by name, for operands that must be known at import (Reshape's shape, Clip's
// bounds).
struct ImportContext {
  int64_t opset = 0;
  std::map<std::string, const tessera::onnx::TensorProto*> constants;
  // Shapes of the activations converted so far, a dynamic dim taken as 1 (the importer infers
  // each node's as it goes).
  std::map<std::string, Shape> shapes;
  // The graph input's dim 0 is 1 or dynamic: a constant Reshape target whose dim 0 is 1 where
  // its input's is means "the batch", and is rewritten to copy it (so batches > 1 run).
  bool batch_of_one = false;
};

// "node 'conv1' (Conv)" — the prefix of every error about a node.
std::string describe_node(const tessera::onnx::NodeProto& node);

// Converts `node` into an IR node appended to graph.nodes. UNIMPLEMENTED for an operator or an
// attribute value Tessera does not support, INVALID_ARGUMENT for a malformed node; both name it.
Status convert_node(const tessera::onnx::NodeProto& node, const ImportContext& context, Graph& graph);

}  // namespace tessera::onnx_import
