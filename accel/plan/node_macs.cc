#include "accel/plan/node_macs.h"

namespace tessera::plan {

uint64_t node_macs(const Graph& graph, const Node& node, const std::map<std::string, Shape>& shapes) {
  const auto shape_of = [&](const std::string& t) -> const Shape* {
    if (const Tensor* c = graph.constant(t)) return &c->shape;
    auto it = shapes.find(t);
    return it == shapes.end() ? nullptr : &it->second;
  };
  const Shape* out = shape_of(node.outputs[0]);
  if (!out || node.inputs.size() < 2) return 0;
  const Shape* b = shape_of(node.inputs[1]);
  if (!b || b->empty()) return 0;
  const auto out_elements = static_cast<uint64_t>(shape_elements(*out));
  switch (node.op) {
    case OpKind::kConv: {
      // Each output element sums C/group x kh x kw products: the weight's elements per output channel.
      if (b->size() < 2) return 0;
      return out_elements * static_cast<uint64_t>(shape_elements(*b) / (*b)[0]);
    }
    case OpKind::kGemm: {
      const auto& attrs = std::get<GemmAttrs>(node.attrs);
      if (b->size() != 2) return 0;
      return out_elements * static_cast<uint64_t>(attrs.trans_b ? (*b)[1] : (*b)[0]);
    }
    case OpKind::kMatMul: {
      const Shape* a = shape_of(node.inputs[0]);
      if (!a || a->empty()) return 0;
      return out_elements * static_cast<uint64_t>(a->back());
    }
    default: return 0;
  }
}

}  // namespace tessera::plan
