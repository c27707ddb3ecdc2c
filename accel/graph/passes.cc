#include "accel/graph/passes.h"

#include <cmath>
#include <set>

namespace tessera {

std::map<std::string, std::vector<size_t>> tensor_consumers(const Graph& graph) {
  std::map<std::string, std::vector<size_t>> consumers;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    for (const std::string& in : graph.nodes[i].inputs) {
      if (!in.empty()) consumers[in].push_back(i);
    }
  }
  return consumers;
}

namespace {

bool is_graph_output(const Graph& graph, const std::string& name) {
  for (const auto& o : graph.outputs) {
    if (o.name == name) return true;
  }
  return false;
}

// Folds batch norm `bn` into `conv`; the conv then produces the batch norm's output.
Status fold_one(Graph& graph, Node& conv, const Node& bn) {
  const Tensor* w = graph.constant(conv.inputs[1]);
  const Tensor* b = conv.inputs.size() > 2 && !conv.inputs[2].empty() ? graph.constant(conv.inputs[2]) : nullptr;
  const Tensor* scale = graph.constant(bn.inputs[1]);
  const Tensor* beta = graph.constant(bn.inputs[2]);
  const Tensor* mean = graph.constant(bn.inputs[3]);
  const Tensor* var = graph.constant(bn.inputs[4]);
  const int64_t m = w->dim(0);
  for (const Tensor* t : {scale, beta, mean, var}) {
    if (t->elements() != m) {
      return Status::invalid_argument("node '" + bn.name + "' (BatchNormalization): parameters have " +
                                      std::to_string(t->elements()) + " channels, the conv '" + conv.name + "' has " +
                                      std::to_string(m));
    }
  }
  const float eps = std::get<BatchNormAttrs>(bn.attrs).epsilon;
  Tensor folded_w = *w;
  Tensor folded_b(Shape{m});
  const int64_t per_channel = w->elements() / m;
  for (int64_t c = 0; c < m; ++c) {
    const double g = scale->data[c] / std::sqrt(static_cast<double>(var->data[c]) + eps);
    for (int64_t i = 0; i < per_channel; ++i) {
      folded_w.data[c * per_channel + i] = static_cast<float>(w->data[c * per_channel + i] * g);
    }
    const double bias = b ? b->data[c] : 0.0;
    folded_b.data[c] = static_cast<float>((bias - mean->data[c]) * g + beta->data[c]);
  }
  const std::string w_name = conv.name + "/bn_folded_weight";
  const std::string b_name = conv.name + "/bn_folded_bias";
  graph.constants[w_name] = std::move(folded_w);
  graph.constants[b_name] = std::move(folded_b);
  conv.inputs.resize(3);
  conv.inputs[1] = w_name;
  conv.inputs[2] = b_name;
  conv.outputs[0] = bn.outputs[0];
  return Status::ok();
}

}  // namespace

int fold_constant_identities(Graph& graph) {
  std::vector<Node> kept;
  int folded = 0;
  for (Node& node : graph.nodes) {
    const Tensor* source = node.op == OpKind::kIdentity ? graph.constant(node.inputs[0]) : nullptr;
    if (source && !is_graph_output(graph, node.outputs[0])) {
      graph.constants[node.outputs[0]] = *source;
      ++folded;
    } else {
      kept.push_back(std::move(node));
    }
  }
  graph.nodes = std::move(kept);
  return folded;
}

Result<int> fold_batch_norm(Graph& graph) {
  const auto consumers = tensor_consumers(graph);
  std::map<std::string, size_t> producer;
  for (size_t i = 0; i < graph.nodes.size(); ++i) producer[graph.nodes[i].outputs[0]] = i;

  std::set<size_t> removed;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& bn = graph.nodes[i];
    if (bn.op != OpKind::kBatchNorm) continue;
    auto p = producer.find(bn.inputs[0]);
    if (p == producer.end()) continue;
    Node& conv = graph.nodes[p->second];
    if (conv.op != OpKind::kConv || is_graph_output(graph, conv.outputs[0])) continue;
    auto c = consumers.find(conv.outputs[0]);
    if (c == consumers.end() || c->second.size() != 1) continue;
    bool constant = graph.constant(conv.inputs[1]) != nullptr;
    if (conv.inputs.size() > 2 && !conv.inputs[2].empty()) constant = constant && graph.constant(conv.inputs[2]);
    for (size_t k = 1; k < 5; ++k) constant = constant && graph.constant(bn.inputs[k]);
    if (!constant) continue;
    TESSERA_RETURN_IF_ERROR(fold_one(graph, conv, bn));
    removed.insert(i);
  }
  std::vector<Node> kept;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (!removed.count(i)) kept.push_back(std::move(graph.nodes[i]));
  }
  graph.nodes = std::move(kept);
  // Drop constants nothing reads any more (the unfolded weights and BN parameters).
  std::set<std::string> used;
  for (const Node& n : graph.nodes) used.insert(n.inputs.begin(), n.inputs.end());
  for (auto it = graph.constants.begin(); it != graph.constants.end();) {
    it = used.count(it->first) ? std::next(it) : graph.constants.erase(it);
  }
  return static_cast<int>(removed.size());
}

}  // namespace tessera
