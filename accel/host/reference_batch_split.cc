#include "accel/host/reference_batch_split.h"

#include <algorithm>
#include <set>

#include "accel/graph/op_shapes.h"

namespace tessera::host {
namespace {

// Separability rules for one node, given the graph's shapes.
class NodeCheck {
 public:
  NodeCheck(const Graph& graph, const std::map<std::string, Shape>& shapes, const std::set<std::string>& fixed,
            const Node& node, int64_t batch)
      : graph_(graph), shapes_(shapes), fixed_(fixed), node_(node), batch_(batch), out_(shapes.at(node.outputs[0])) {}

  bool separable() const {
    if (out_.empty() || out_[0] != batch_) return false;
    switch (node_.op) {
      case OpKind::kConv: return batched(0) && parameter(1) && parameter(2);
      case OpKind::kBatchNorm: return batched(0) && parameter(1) && parameter(2) && parameter(3) && parameter(4);
      case OpKind::kGemm: return !node_attrs<GemmAttrs>(node_).trans_a && batched(0) && parameter(1) && broadcasts(2);
      case OpKind::kMatMul:
        // A's dim 0 must be the output's dim 0; a constant B that is a plain matrix is fine.
        return batched(0) && shape(0).size() == out_.size() &&
               (broadcasts(1) || (!activation(1) && shape(1).size() <= 2));
      case OpKind::kAdd:
      case OpKind::kMul:
      case OpKind::kSub:
      case OpKind::kDiv:
      case OpKind::kPow: return (activation(0) || activation(1)) && broadcasts(0) && broadcasts(1);
      case OpKind::kConcat:
        for (size_t i = 0; i < node_.inputs.size(); ++i) {
          if (!batched(i)) return false;
        }
        return axis_not_zero();
      case OpKind::kSoftmax:
      case OpKind::kFlatten: return batched(0) && axis_not_zero();
      case OpKind::kTranspose: return batched(0) && std::get<TransposeAttrs>(node_.attrs).perm.front() == 0;
      case OpKind::kSlice: return batched(0) && !touches_axis0(std::get<SliceAttrs>(node_.attrs).axes, true);
      case OpKind::kGather: return batched(0) && nonzero(std::get<GatherAttrs>(node_.attrs).axis);
      case OpKind::kPad: {
        const auto& pads = std::get<PadAttrs>(node_.attrs).pads;
        return batched(0) && pads.front() == 0 && pads[pads.size() / 2] == 0;
      }
      case OpKind::kReduceMean: {
        const auto& axes = node_attrs<ReduceAttrs>(node_).axes;
        return batched(0) && !axes.empty() && !touches_axis0(std::vector<int64_t>(axes.begin(), axes.end()), false);
      }
      case OpKind::kLayerNorm:
        return batched(0) && parameter(1) && parameter(2) && nonzero(node_attrs<LayerNormAttrs>(node_).axis);
      default: return batched(0);  // unary ops, pools, LRN, Reshape keeping dim 0
    }
  }

 private:
  // Depends on the graph inputs (not a constant, nor computed from constants only).
  bool activation(size_t i) const { return shapes_.count(node_.inputs[i]) > 0 && fixed_.count(node_.inputs[i]) == 0; }
  const Shape& shape(size_t i) const {
    const std::string& name = node_.inputs[i];
    return shapes_.count(name) > 0 ? shapes_.at(name) : graph_.constant(name)->shape;
  }
  // An activation whose dim 0 is the batch.
  bool batched(size_t i) const { return activation(i) && !shape(i).empty() && shape(i)[0] == batch_; }
  // Absent, or a constant (weights do not depend on the batch).
  bool parameter(size_t i) const { return i >= node_.inputs.size() || node_.inputs[i].empty() || !activation(i); }
  // A broadcast operand: an activation aligned with the output's batch dim, or a constant that
  // does not reach (or is 1 in) the batch dim.
  bool broadcasts(size_t i) const {
    if (i >= node_.inputs.size() || node_.inputs[i].empty()) return true;
    const Shape& s = shape(i);
    if (activation(i)) return s.size() == out_.size() && s[0] == batch_;
    return s.size() < out_.size() || s[0] == 1;
  }
  // Whether a listed axis is dim 0; an empty list counts as touching it when `empty_is_all`
  // (Slice's default axes start at 0).
  bool touches_axis0(const std::vector<int64_t>& axes, bool empty_is_all) const {
    if (axes.empty()) return empty_is_all;
    const auto rank = static_cast<int64_t>(shape(0).size());
    return std::any_of(axes.begin(), axes.end(), [&](int64_t a) { return a == 0 || a == -rank; });
  }
  bool nonzero(int axis) const {
    auto a = normalize_axis(axis, static_cast<int>(shape(0).size()));
    return a && *a != 0;
  }
  bool axis_not_zero() const {
    auto axis = normalize_axis(node_axis(node_), static_cast<int>(shape(0).size()), node_.op == OpKind::kFlatten);
    return axis && *axis != 0;
  }

  const Graph& graph_;
  const std::map<std::string, Shape>& shapes_;
  const std::set<std::string>& fixed_;
  const Node& node_;
  int64_t batch_;
  const Shape& out_;
};

}  // namespace

int64_t common_batch(const Graph& graph, const std::map<std::string, Shape>& shapes) {
  int64_t batch = 0;
  for (const ValueInfo& in : graph.inputs) {
    const Shape& s = shapes.at(in.name);
    if (s.empty() || (batch != 0 && s[0] != batch)) return 0;
    batch = s[0];
  }
  return batch;
}

bool batch_separable(const Graph& graph, const std::map<std::string, Shape>& shapes, int64_t batch) {
  // Outputs of nodes that read only constants (e.g. an Identity on a weight): the same in both
  // halves, so they count as constants.
  std::set<std::string> fixed;
  for (const Node& node : graph.nodes) {
    const bool reads_constants_only = std::all_of(node.inputs.begin(), node.inputs.end(), [&](const std::string& name) {
      return name.empty() || graph.constant(name) != nullptr || fixed.count(name) > 0;
    });
    if (reads_constants_only) {
      fixed.insert(node.outputs[0]);
    } else if (!NodeCheck(graph, shapes, fixed, node, batch).separable()) {
      return false;
    }
  }
  for (const ValueInfo& out : graph.outputs) {
    auto it = shapes.find(out.name);
    if (it == shapes.end() || fixed.count(out.name) > 0 || it->second.empty() || it->second[0] != batch) {
      return false;
    }
  }
  return true;
}

Tensor slice_batch(const Tensor& t, int64_t begin, int64_t end) {
  const int64_t per_item = t.dim(0) == 0 ? 0 : t.elements() / t.dim(0);
  Shape shape = t.shape;
  shape[0] = end - begin;
  return Tensor(shape, std::vector<float>(t.data.begin() + begin * per_item, t.data.begin() + end * per_item));
}

Tensor join_batch(const Tensor& a, const Tensor& b) {
  Shape shape = a.shape;
  shape[0] += b.dim(0);
  Tensor t(shape, a.data);
  t.data.insert(t.data.end(), b.data.begin(), b.data.end());
  return t;
}

}  // namespace tessera::host
