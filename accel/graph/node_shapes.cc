// Node-level rules of op_shapes.h: operand counts, attrs, one node's output shape, and shape
// propagation through a graph.
#include <string>

#include "accel/graph/op_shapes.h"

namespace tessera {
namespace {

Status with_label(const Status& s, const std::string& label) { return {s.code(), label + ": " + s.message()}; }

// Whether the node's attrs alternative is what its op expects.
Status check_attrs(const Node& node) {
  const bool none = std::holds_alternative<std::monostate>(node.attrs);
  auto need = [&](bool holds, bool optional, const char* type) -> Status {
    if (holds || (optional && none)) return Status::ok();
    return Status::invalid_argument(std::string(optional ? "attributes must be " : "needs ") + type +
                                    (optional ? " or none" : " attributes"));
  };
  switch (node.op) {
    case OpKind::kConv: return need(std::holds_alternative<ConvAttrs>(node.attrs), false, "ConvAttrs");
    case OpKind::kMaxPool:
    case OpKind::kAveragePool: return need(std::holds_alternative<PoolAttrs>(node.attrs), false, "PoolAttrs");
    case OpKind::kReshape:
      return need(std::holds_alternative<ReshapeAttrs>(node.attrs), false, "ReshapeAttrs (target shape)");
    case OpKind::kConcat: return need(std::holds_alternative<AxisAttrs>(node.attrs), false, "AxisAttrs");
    case OpKind::kSoftmax:
    case OpKind::kFlatten: return need(std::holds_alternative<AxisAttrs>(node.attrs), true, "AxisAttrs");
    case OpKind::kGemm: return need(std::holds_alternative<GemmAttrs>(node.attrs), true, "GemmAttrs");
    case OpKind::kLrn: return need(std::holds_alternative<LrnAttrs>(node.attrs), true, "LrnAttrs");
    case OpKind::kBatchNorm: return need(std::holds_alternative<BatchNormAttrs>(node.attrs), true, "BatchNormAttrs");
    case OpKind::kClip:
      if (none) {
        for (size_t i = 1; i < node.inputs.size(); ++i) {
          if (!node.inputs[i].empty()) {
            return Status::invalid_argument("min/max operands need ClipAttrs carrying their values");
          }
        }
      }
      return need(std::holds_alternative<ClipAttrs>(node.attrs), true, "ClipAttrs");
    case OpKind::kHardSigmoid:
      return need(std::holds_alternative<HardSigmoidAttrs>(node.attrs), true, "HardSigmoidAttrs");
    case OpKind::kTranspose: return need(std::holds_alternative<TransposeAttrs>(node.attrs), false, "TransposeAttrs");
    case OpKind::kSlice: return need(std::holds_alternative<SliceAttrs>(node.attrs), false, "SliceAttrs");
    case OpKind::kGather: return need(std::holds_alternative<GatherAttrs>(node.attrs), false, "GatherAttrs");
    case OpKind::kPad: return need(std::holds_alternative<PadAttrs>(node.attrs), false, "PadAttrs");
    case OpKind::kReduceMean: return need(std::holds_alternative<ReduceAttrs>(node.attrs), true, "ReduceAttrs");
    case OpKind::kLayerNorm: return need(std::holds_alternative<LayerNormAttrs>(node.attrs), true, "LayerNormAttrs");
    case OpKind::kRelu:
    case OpKind::kGlobalAveragePool:
    case OpKind::kMatMul:
    case OpKind::kAdd:
    case OpKind::kMul:
    case OpKind::kSub:
    case OpKind::kDiv:
    case OpKind::kPow:
    case OpKind::kSigmoid:
    case OpKind::kHardSwish:
    case OpKind::kSqrt:
    case OpKind::kErf:
    case OpKind::kGelu:
    case OpKind::kIdentity:
      if (!none) return Status::invalid_argument("takes no attributes");
      return Status::ok();
  }
  return Status::invalid_argument("unknown op");
}

}  // namespace

std::string node_label(const Node& node, size_t index) {
  // Built by appending: GCC 12's -Wrestrict misfires on "literal" + std::string here.
  std::string label = "node ";
  if (node.name.empty()) {
    label.append("#").append(std::to_string(index));
  } else {
    label.append("'").append(node.name).append("'");
  }
  return label.append(" (").append(op_kind_name(node.op)).append(")");
}

OperandCount op_operand_count(OpKind op) {
  switch (op) {
    case OpKind::kConv:
    case OpKind::kGemm: return {2, 3};
    case OpKind::kClip: return {1, 3};
    case OpKind::kMatMul:
    case OpKind::kAdd:
    case OpKind::kMul:
    case OpKind::kSub:
    case OpKind::kDiv:
    case OpKind::kPow: return {2, 2};
    case OpKind::kLayerNorm: return {2, 3};
    case OpKind::kConcat: return {1, -1};
    case OpKind::kReshape: return {1, 2};  // the shape operand, if kept, is carried by attrs
    case OpKind::kBatchNorm: return {5, 5};
    default: return {1, 1};
  }
}

Status check_node_signature(const Node& node) {
  const OperandCount count = op_operand_count(node.op);
  const int n = static_cast<int>(node.inputs.size());
  if (n < count.min || (count.max >= 0 && n > count.max)) {
    std::string range = std::to_string(count.min);
    if (count.max != count.min) range += count.max < 0 ? " or more" : " to " + std::to_string(count.max);
    return Status::invalid_argument("takes " + range + " operands, got " + std::to_string(n));
  }
  const int required = node.op == OpKind::kConcat ? n : count.min;
  for (int i = 0; i < required; ++i) {
    if (node.inputs[static_cast<size_t>(i)].empty()) {
      return Status::invalid_argument("operand " + std::to_string(i) + " is required but empty");
    }
  }
  if (node.outputs.empty() || node.outputs[0].empty()) {
    return Status::invalid_argument("has no output");
  }
  for (size_t i = 1; i < node.outputs.size(); ++i) {
    if (!node.outputs[i].empty()) {
      return Status::invalid_argument("has " + std::to_string(node.outputs.size()) + " outputs; only one is supported");
    }
  }
  return check_attrs(node);
}

int node_axis(const Node& node) {
  if (const AxisAttrs* a = std::get_if<AxisAttrs>(&node.attrs)) return a->axis;
  return node.op == OpKind::kSoftmax ? -1 : 1;
}

Result<Shape> node_output_shape(const Node& node, const std::vector<const Shape*>& operands) {
  TESSERA_RETURN_IF_ERROR(check_node_signature(node));
  if (operands.size() != node.inputs.size()) {
    return Status::internal("operand shapes do not match the node's inputs");
  }
  const OperandCount count = op_operand_count(node.op);
  for (size_t i = 0; i < operands.size(); ++i) {
    if (operands[i] == nullptr && (node.op == OpKind::kConcat || static_cast<int>(i) < count.min)) {
      return Status::invalid_argument("operand " + std::to_string(i) + " has no shape");
    }
  }
  auto opt = [&](size_t i) { return i < operands.size() ? operands[i] : nullptr; };
  const Shape& x = *operands[0];
  switch (node.op) {
    case OpKind::kConv: return conv_output_shape(x, *operands[1], opt(2), std::get<ConvAttrs>(node.attrs));
    case OpKind::kRelu:
    case OpKind::kClip:
    case OpKind::kSigmoid:
    case OpKind::kHardSigmoid:
    case OpKind::kHardSwish:
    case OpKind::kSqrt:
    case OpKind::kErf:
    case OpKind::kGelu:
    case OpKind::kIdentity: return x;
    case OpKind::kMaxPool:
    case OpKind::kAveragePool: return pool_output_shape(x, std::get<PoolAttrs>(node.attrs));
    case OpKind::kGlobalAveragePool: return global_pool_output_shape(x);
    case OpKind::kGemm: return gemm_output_shape(x, *operands[1], opt(2), node_attrs<GemmAttrs>(node));
    case OpKind::kMatMul: return matmul_output_shape(x, *operands[1]);
    case OpKind::kAdd:
    case OpKind::kMul:
    case OpKind::kSub:
    case OpKind::kDiv:
    case OpKind::kPow: return broadcast_shape(x, *operands[1]);
    case OpKind::kTranspose: return transpose_output_shape(x, std::get<TransposeAttrs>(node.attrs).perm);
    case OpKind::kSlice: return slice_output_shape(x, std::get<SliceAttrs>(node.attrs));
    case OpKind::kGather: return gather_output_shape(x, std::get<GatherAttrs>(node.attrs));
    case OpKind::kPad: return pad_output_shape(x, std::get<PadAttrs>(node.attrs));
    case OpKind::kReduceMean: return reduce_output_shape(x, node_attrs<ReduceAttrs>(node));
    case OpKind::kLayerNorm: return layer_norm_output_shape(x, *operands[1], opt(2), node_attrs<LayerNormAttrs>(node));
    case OpKind::kConcat: {
      std::vector<Shape> shapes;
      shapes.reserve(operands.size());
      for (const Shape* s : operands) shapes.push_back(*s);
      return concat_output_shape(shapes, node_axis(node), node_attrs<AxisAttrs>(node).broadcast_batch);
    }
    case OpKind::kFlatten: return flatten_output_shape(x, node_axis(node));
    case OpKind::kReshape: return reshape_output_shape(x, std::get<ReshapeAttrs>(node.attrs));
    case OpKind::kBatchNorm: return batch_norm_output_shape(x, *operands[1], *operands[2], *operands[3], *operands[4]);
    case OpKind::kLrn: return lrn_output_shape(x, node_attrs<LrnAttrs>(node));
    case OpKind::kSoftmax: return softmax_output_shape(x, node_axis(node));
  }
  return Status::unimplemented("no shape rule");
}

Result<std::map<std::string, Shape>> infer_shapes_from(const Graph& graph,
                                                       const std::map<std::string, Shape>& input_shapes) {
  std::map<std::string, Shape> shapes;
  for (const ValueInfo& in : graph.inputs) {
    auto it = input_shapes.find(in.name);
    if (it == input_shapes.end()) {
      return Status::invalid_argument("graph input '" + in.name + "' has no shape");
    }
    for (int64_t d : it->second) {
      if (d < 0) {
        return Status::invalid_argument("graph input '" + in.name +
                                        "' has an unknown dim: " + shape_to_string(it->second));
      }
    }
    shapes[in.name] = it->second;
  }
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    std::vector<const Shape*> operands;
    for (const std::string& name : node.inputs) {
      if (name.empty()) {
        operands.push_back(nullptr);
      } else if (auto it = shapes.find(name); it != shapes.end()) {
        operands.push_back(&it->second);
      } else if (const Tensor* c = graph.constant(name)) {
        operands.push_back(&c->shape);
      } else {
        return Status::invalid_argument(node_label(node, i) + ": input '" + name +
                                        "' is not a graph input, a constant or an earlier node's output");
      }
    }
    auto out = node_output_shape(node, operands);
    if (!out) return with_label(out.status(), node_label(node, i));
    shapes[node.outputs[0]] = std::move(out).value();
  }
  return shapes;
}

}  // namespace tessera
