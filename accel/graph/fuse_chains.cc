// fuse_layer_norm and fuse_gelu (passes.h): pattern matches over the exporters' op chains.
#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "accel/graph/op_shapes.h"
#include "accel/graph/passes.h"

namespace tessera {
namespace {

// Who produces and who reads each tensor, and the edits to apply once matching is done.
class Chains {
 public:
  explicit Chains(Graph& graph) : graph_(graph), readers_(tensor_consumers(graph)) {
    for (const ValueInfo& o : graph.outputs) outputs_.insert(o.name);
  }

  const Node& node(size_t i) const { return graph_.nodes[i]; }
  size_t size() const { return graph_.nodes.size(); }

  // The one node reading `name` (not a graph output, not taken by an earlier match), if it is `op`.
  std::optional<size_t> only_reader(const std::string& name, OpKind op) const {
    if (outputs_.count(name) != 0) return std::nullopt;
    auto it = readers_.find(name);
    if (it == readers_.end() || it->second.size() != 1) return std::nullopt;
    const size_t r = it->second.front();
    if (graph_.nodes[r].op != op || taken_.count(r) != 0) return std::nullopt;
    return r;
  }

  const std::vector<size_t>& readers(const std::string& name) const {
    static const std::vector<size_t> none;
    auto it = readers_.find(name);
    return it == readers_.end() ? none : it->second;
  }

  bool is_output(const std::string& name) const { return outputs_.count(name) != 0; }

  // A one-element constant operand's value.
  std::optional<float> scalar(const std::string& name) const {
    const Tensor* t = graph_.constant(name);
    if (t == nullptr || t->elements() != 1) return std::nullopt;
    return t->data[0];
  }

  // The operand of binary node `i` other than `name`, when `name` is one of its two.
  std::optional<std::string> other(size_t i, const std::string& name) const {
    const Node& n = graph_.nodes[i];
    if (n.inputs.size() != 2) return std::nullopt;
    if (n.inputs[0] == name) return n.inputs[1];
    if (n.inputs[1] == name) return n.inputs[0];
    return std::nullopt;
  }

  // Replaces nodes `chain` by `fused`, placed where the last of them was.
  void replace(const std::vector<size_t>& chain, Node fused) {
    size_t last = 0;
    for (size_t i : chain) {
      taken_.insert(i);
      last = std::max(last, i);
    }
    fused_[last] = std::move(fused);
  }

  int apply() {
    std::vector<Node> nodes;
    for (size_t i = 0; i < graph_.nodes.size(); ++i) {
      if (auto it = fused_.find(i); it != fused_.end()) {
        nodes.push_back(std::move(it->second));
      } else if (taken_.count(i) == 0) {
        nodes.push_back(std::move(graph_.nodes[i]));
      }
    }
    graph_.nodes = std::move(nodes);
    return static_cast<int>(fused_.size());
  }

  Graph& graph() { return graph_; }

 private:
  Graph& graph_;
  std::map<std::string, std::vector<size_t>> readers_;
  std::set<std::string> outputs_;
  std::set<size_t> taken_;
  std::map<size_t, Node> fused_;
};

bool near(std::optional<float> v, double want) { return v && std::fabs(*v - want) <= 1e-4 * std::fabs(want); }

// The first reduced dim, when a ReduceMean keeps dims and reduces exactly the trailing dims.
std::optional<int> trailing_axis(const Node& mean, const Shape& x) {
  if (mean.op != OpKind::kReduceMean) return std::nullopt;
  const ReduceAttrs r = node_attrs<ReduceAttrs>(mean);
  if (!r.keep_dims || r.axes.empty()) return std::nullopt;
  auto axes = reduce_axes(x, r);
  if (!axes) return std::nullopt;
  const int rank = static_cast<int>(x.size());
  const int first = rank - static_cast<int>(axes->size());
  for (size_t i = 0; i < axes->size(); ++i) {
    if ((*axes)[i] != first + static_cast<int>(i)) return std::nullopt;
  }
  return first;
}

bool same_reduction(const Node& a, const Node& b) {
  const ReduceAttrs ra = node_attrs<ReduceAttrs>(a), rb = node_attrs<ReduceAttrs>(b);
  return ra.axes == rb.axes && ra.keep_dims == rb.keep_dims;
}

// Matches the chain starting at ReduceMean `m`; records the fusion in `c`.
bool match_layer_norm(Chains& c, size_t m, const std::map<std::string, Shape>& shapes) {
  const Node& mean = c.node(m);
  const std::string& x = mean.inputs[0];
  auto xs = shapes.find(x);
  if (xs == shapes.end()) return false;
  const std::optional<int> axis = trailing_axis(mean, xs->second);
  if (!axis) return false;
  auto sub = c.only_reader(mean.outputs[0], OpKind::kSub);
  if (!sub || c.node(*sub).inputs[0] != x || c.node(*sub).inputs[1] != mean.outputs[0]) return false;
  const std::string& d = c.node(*sub).outputs[0];
  const auto& d_readers = c.readers(d);
  if (d_readers.size() != 2 || c.is_output(d)) return false;
  std::optional<size_t> pow, div;
  for (size_t r : d_readers) {
    if (c.node(r).op == OpKind::kPow && c.node(r).inputs[0] == d && near(c.scalar(c.node(r).inputs[1]), 2.0)) pow = r;
    if (c.node(r).op == OpKind::kDiv && c.node(r).inputs[0] == d) div = r;
  }
  if (!pow || !div) return false;
  auto var = c.only_reader(c.node(*pow).outputs[0], OpKind::kReduceMean);
  if (!var || !same_reduction(mean, c.node(*var))) return false;
  auto add = c.only_reader(c.node(*var).outputs[0], OpKind::kAdd);
  if (!add) return false;
  auto eps_name = c.other(*add, c.node(*var).outputs[0]);
  const std::optional<float> eps = eps_name ? c.scalar(*eps_name) : std::nullopt;
  if (!eps || !(*eps >= 0.0f)) return false;
  auto sqrt = c.only_reader(c.node(*add).outputs[0], OpKind::kSqrt);
  if (!sqrt || c.only_reader(c.node(*sqrt).outputs[0], OpKind::kDiv) != div ||
      c.node(*div).inputs[1] != c.node(*sqrt).outputs[0]) {
    return false;
  }
  std::vector<size_t> chain{m, *sub, *pow, *var, *add, *sqrt, *div};
  const Shape tail(xs->second.begin() + *axis, xs->second.end());
  auto fits = [&](const std::string& name) {
    const Tensor* t = c.graph().constant(name);
    return t != nullptr && layer_norm_output_shape(xs->second, t->shape, nullptr, LayerNormAttrs{*axis, *eps}).is_ok();
  };
  std::string scale, bias, out = c.node(*div).outputs[0];
  if (auto mul = c.only_reader(out, OpKind::kMul)) {
    auto g = c.other(*mul, out);
    if (g && fits(*g)) {
      scale = *g;
      chain.push_back(*mul);
      out = c.node(*mul).outputs[0];
      if (auto badd = c.only_reader(out, OpKind::kAdd)) {
        auto b = c.other(*badd, out);
        if (b && fits(*b)) {
          bias = *b;
          chain.push_back(*badd);
          out = c.node(*badd).outputs[0];
        }
      }
    }
  }
  Node ln;
  ln.name = mean.name + "/layer_norm";
  ln.op = OpKind::kLayerNorm;
  if (scale.empty()) {
    scale = ln.name + "/scale";
    Tensor ones(tail);
    std::fill(ones.data.begin(), ones.data.end(), 1.0f);
    c.graph().constants[scale] = std::move(ones);
  }
  ln.inputs = {x, scale};
  if (!bias.empty()) ln.inputs.push_back(bias);
  ln.outputs = {out};
  ln.attrs = LayerNormAttrs{*axis, *eps};
  c.replace(chain, std::move(ln));
  return true;
}

bool match_gelu(Chains& c, size_t e) {
  const Node& erf = c.node(e);
  // The Erf's input: x / sqrt(2) or x * (1 / sqrt(2)), read by the Erf alone.
  std::optional<size_t> scale_node;
  std::string x;
  for (size_t i = 0; i < c.size() && !scale_node; ++i) {
    const Node& n = c.node(i);
    if (n.outputs[0] != erf.inputs[0] || n.inputs.size() != 2) continue;
    if (n.op == OpKind::kDiv && near(c.scalar(n.inputs[1]), std::sqrt(2.0))) scale_node = i;
    if (n.op == OpKind::kMul && near(c.scalar(n.inputs[1]), std::sqrt(0.5))) scale_node = i;
    if (scale_node) x = n.inputs[0];
  }
  if (!scale_node || c.only_reader(erf.inputs[0], OpKind::kErf) != e) return false;
  auto add = c.only_reader(erf.outputs[0], OpKind::kAdd);
  if (!add || !near(c.scalar(c.other(*add, erf.outputs[0]).value_or("")), 1.0)) return false;
  auto first = c.only_reader(c.node(*add).outputs[0], OpKind::kMul);
  if (!first) return false;
  auto second = c.only_reader(c.node(*first).outputs[0], OpKind::kMul);
  if (!second) return false;
  const auto a = c.other(*first, c.node(*add).outputs[0]);
  const auto b = c.other(*second, c.node(*first).outputs[0]);
  if (!a || !b) return false;
  const bool x_then_half = *a == x && near(c.scalar(*b), 0.5);
  const bool half_then_x = *b == x && near(c.scalar(*a), 0.5);
  if (!x_then_half && !half_then_x) return false;
  Node gelu;
  gelu.name = erf.name + "/gelu";
  gelu.op = OpKind::kGelu;
  gelu.inputs = {x};
  gelu.outputs = {c.node(*second).outputs[0]};
  c.replace({*scale_node, e, *add, *first, *second}, std::move(gelu));
  return true;
}

}  // namespace

Result<int> fuse_layer_norm(Graph& graph) {
  bool any = false;
  for (const Node& n : graph.nodes) any = any || n.op == OpKind::kReduceMean;
  if (!any) return 0;
  // Shapes at batch 1; a graph with other dynamic dims keeps its chains (they run unfused).
  const auto shapes = infer_shapes(graph, 1);
  if (!shapes.is_ok()) return 0;
  Chains c(graph);
  for (size_t i = 0; i < c.size(); ++i) {
    if (c.node(i).op == OpKind::kReduceMean) match_layer_norm(c, i, *shapes);
  }
  return c.apply();
}

Result<int> fuse_gelu(Graph& graph) {
  Chains c(graph);
  for (size_t i = 0; i < c.size(); ++i) {
    if (c.node(i).op == OpKind::kErf) match_gelu(c, i);
  }
  return c.apply();
}

}  // namespace tessera
