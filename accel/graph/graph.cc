#include "accel/graph/graph.h"

#include <set>
#include <string>

#include "accel/graph/op_shapes.h"

namespace tessera {

const char* op_kind_name(OpKind op) {
  switch (op) {
    case OpKind::kConv: return "Conv";
    case OpKind::kRelu: return "Relu";
    case OpKind::kClip: return "Clip";
    case OpKind::kMaxPool: return "MaxPool";
    case OpKind::kAveragePool: return "AveragePool";
    case OpKind::kGlobalAveragePool: return "GlobalAveragePool";
    case OpKind::kGemm: return "Gemm";
    case OpKind::kMatMul: return "MatMul";
    case OpKind::kAdd: return "Add";
    case OpKind::kMul: return "Mul";
    case OpKind::kConcat: return "Concat";
    case OpKind::kFlatten: return "Flatten";
    case OpKind::kReshape: return "Reshape";
    case OpKind::kBatchNorm: return "BatchNormalization";
    case OpKind::kLrn: return "LRN";
    case OpKind::kSoftmax: return "Softmax";
    case OpKind::kIdentity: return "Identity";
    case OpKind::kSub: return "Sub";
    case OpKind::kDiv: return "Div";
    case OpKind::kPow: return "Pow";
    case OpKind::kSigmoid: return "Sigmoid";
    case OpKind::kHardSigmoid: return "HardSigmoid";
    case OpKind::kHardSwish: return "HardSwish";
    case OpKind::kSqrt: return "Sqrt";
    case OpKind::kErf: return "Erf";
    case OpKind::kGelu: return "Gelu";
    case OpKind::kTranspose: return "Transpose";
    case OpKind::kSlice: return "Slice";
    case OpKind::kGather: return "Gather";
    case OpKind::kPad: return "Pad";
    case OpKind::kReduceMean: return "ReduceMean";
    case OpKind::kLayerNorm: return "LayerNormalization";
  }
  return "Unknown";
}

const Tensor* Graph::constant(const std::string& key) const {
  auto it = constants.find(key);
  return it == constants.end() ? nullptr : &it->second;
}

Status validate_graph(const Graph& graph) {
  std::set<std::string> defined;  // names a node may read
  for (const auto& [name, tensor] : graph.constants) {
    bool dims_ok = true;
    for (int64_t d : tensor.shape) dims_ok = dims_ok && d >= 0;
    if (!dims_ok || tensor.elements() != shape_elements(tensor.shape)) {
      return Status::invalid_argument("constant '" + name + "' has " + std::to_string(tensor.elements()) +
                                      " values for shape " + shape_to_string(tensor.shape));
    }
    defined.insert(name);
  }
  for (const ValueInfo& in : graph.inputs) {
    if (in.name.empty()) return Status::invalid_argument("a graph input has no name");
    if (graph.constant(in.name) != nullptr) {
      return Status::invalid_argument("graph input '" + in.name + "' is also a constant");
    }
    if (!defined.insert(in.name).second) {
      return Status::invalid_argument("graph input '" + in.name + "' is listed twice");
    }
  }
  std::set<std::string> node_names;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    const std::string label = node_label(node, i);
    if (!node.name.empty() && !node_names.insert(node.name).second) {
      return Status::invalid_argument(label + ": duplicate node name");
    }
    if (Status s = check_node_signature(node); !s.is_ok()) {
      return Status(s.code(), label + ": " + s.message());
    }
    for (const std::string& name : node.inputs) {
      if (!name.empty() && defined.count(name) == 0) {
        return Status::invalid_argument(label + ": input '" + name +
                                        "' is not a graph input, a constant or an earlier node's output");
      }
    }
    for (const std::string& name : node.outputs) {
      if (!name.empty() && !defined.insert(name).second) {
        return Status::invalid_argument(label + ": output '" + name + "' is already defined");
      }
    }
  }
  if (graph.outputs.empty()) return Status::invalid_argument("graph has no outputs");
  for (const ValueInfo& out : graph.outputs) {
    if (defined.count(out.name) == 0) {
      return Status::invalid_argument("graph output '" + out.name + "' is not produced by any node");
    }
  }
  return Status::ok();
}

Result<std::map<std::string, Shape>> infer_shapes(const Graph& graph, int64_t batch) {
  if (batch < 1) return Status::invalid_argument("batch must be >= 1, got " + std::to_string(batch));
  TESSERA_RETURN_IF_ERROR(validate_graph(graph));
  std::map<std::string, Shape> input_shapes;
  for (const ValueInfo& in : graph.inputs) {
    if (in.shape.empty()) {
      return Status::invalid_argument("graph input '" + in.name + "' has no batch dim");
    }
    Shape s = in.shape;
    s[0] = batch;
    input_shapes[in.name] = std::move(s);
  }
  return infer_shapes_from(graph, input_shapes);
}

}  // namespace tessera
