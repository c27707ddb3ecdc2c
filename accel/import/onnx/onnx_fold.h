// Constant folding at import: an ONNX node whose operands are all known at load (initializers,
// Constant nodes, shapes of activations) is evaluated here, so shape arithmetic (Shape, Gather,
// Unsqueeze, Concat, Range, Where, Expand, ConstantOfShape, Cast, Slice, ...) and masks built
// from constants never become runtime operators.
#pragma once

#include <string>
#include <vector>

#include "accel/common/status.h"
#include "accel/graph/tensor.h"
#include "onnx.pb.h"

namespace tessera::onnx_import {

// A tensor known at import. Integers (and booleans) are held exactly in doubles (|v| < 2^53;
// int64's extremes, Slice's "to the end", are clamped on the way back).
struct ConstValue {
  Shape shape;
  std::vector<double> values;
  bool integer = false;
};

Result<ConstValue> decode_const(const tessera::onnx::TensorProto& proto, const std::string& what);
// The value as a TensorProto named `name` (INT64 when integer, else FLOAT).
tessera::onnx::TensorProto encode_const(const ConstValue& value, const std::string& name);

// Whether `op_type` is evaluated at import when all its operands are constants.
bool is_foldable(const std::string& op_type);

// Evaluates a foldable node on constant operands (nullptr for an omitted optional one).
// INVALID_ARGUMENT naming the node when the operands do not fit the operator.
Result<ConstValue> fold_node(const tessera::onnx::NodeProto& node, const std::vector<const ConstValue*>& operands,
                             int64_t opset);

}  // namespace tessera::onnx_import
