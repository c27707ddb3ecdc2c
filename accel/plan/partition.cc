#include "accel/plan/partition.h"

#include <algorithm>
#include <set>

#include "accel/graph/passes.h"
#include "kernels/kernel_abi.h"

namespace tessera::plan {
namespace {

class Partitioner {
 public:
  Partitioner(const Graph& graph, const std::map<std::string, Shape>& shapes)
      : graph_(graph), shapes_(shapes), consumers_(tensor_consumers(graph)) {
    for (const auto& o : graph.outputs) graph_outputs_.insert(o.name);
  }

  Result<Partition> run() {
    Partition p;
    p.fabric_input = graph_.inputs[0].name;
    fabric_.insert(p.fabric_input);
    size_t i = 0;
    for (; i < graph_.nodes.size(); ++i) {
      if (fused_.count(i)) continue;
      std::string reason;
      if (!take(i, p, reason)) {
        p.stop_reason = node_name(i) + ": " + reason;
        break;
      }
    }
    for (; i < graph_.nodes.size(); ++i) {
      if (!fused_.count(i)) p.host_nodes.push_back(i);
    }
    if (p.layers.empty()) {
      p.concats.clear();
      p.slices.clear();
      p.aliases.clear();
      return p;
    }
    // The fabric tensors the host part or the caller reads.
    std::set<std::string> boundary;
    for (size_t n : p.host_nodes) {
      for (const auto& in : graph_.nodes[n].inputs) {
        if (fabric_.count(in) && !graph_.constant(in)) boundary.insert(in);
      }
    }
    for (const auto& o : graph_outputs_) {
      if (fabric_.count(o)) boundary.insert(o);
    }
    if (boundary.size() != 1 || boundary.count(p.fabric_input) || p.slices.count(*boundary.begin())) {
      Partition host_only;
      host_only.fabric_input = p.fabric_input;
      for (size_t n = 0; n < graph_.nodes.size(); ++n) host_only.host_nodes.push_back(n);
      host_only.stop_reason = "the fabric part would hand " + std::to_string(boundary.size()) +
                              " tensors (or a concat slice) to the host; running everything on the host";
      return host_only;
    }
    p.fabric_output = *boundary.begin();
    return p;
  }

 private:
  std::string node_name(size_t i) const {
    return "node '" + graph_.nodes[i].name + "' (" + op_kind_name(graph_.nodes[i].op) + ")";
  }

  // The node that alone consumes `tensor`, if there is exactly one and it is not also an output.
  const Node* sole_consumer(const std::string& tensor, size_t* index) const {
    if (graph_outputs_.count(tensor)) return nullptr;
    auto it = consumers_.find(tensor);
    if (it == consumers_.end() || it->second.size() != 1) return nullptr;
    *index = it->second[0];
    return &graph_.nodes[*index];
  }

  int64_t dim(const std::string& tensor, int d) const { return shapes_.at(tensor)[static_cast<size_t>(d)]; }

  // Activation fused into a conv or add: ReLU, or Clip with min 0 (ReLU6) / no min.
  void fuse_activation(FabricLayer& layer) {
    size_t j = 0;
    const Node* next = sole_consumer(layer.output, &j);
    if (!next) return;
    if (next->op == OpKind::kRelu) {
      layer.relu = true;
    } else if (next->op == OpKind::kClip) {
      const auto& clip = std::get<ClipAttrs>(next->attrs);
      if (clip.min == 0.0f) {
        layer.relu = true;
      } else if (clip.min > -1e30f) {
        return;  // a general clip stays unfused
      }
      layer.clip_max = clip.max;
    } else {
      return;
    }
    fused_.insert(j);
    layer.nodes.push_back(j);
    layer.output = next->outputs[0];
  }

  static bool pool_fits(const PoolAttrs& pool, uint32_t max_kernel) {
    return static_cast<uint32_t>(pool.kernel[0]) <= max_kernel && static_cast<uint32_t>(pool.kernel[1]) <= max_kernel &&
           pool.pads[0] < pool.kernel[0] && pool.pads[1] < pool.kernel[1];
  }

  bool take_conv(size_t i, Partition& p, std::string& reason) {
    const Node& node = graph_.nodes[i];
    const auto& attrs = std::get<ConvAttrs>(node.attrs);
    if (!graph_.constant(node.inputs[1]) ||
        (node.inputs.size() > 2 && !node.inputs[2].empty() && !graph_.constant(node.inputs[2]))) {
      reason = "weights that are not constants stay on the host";
      return false;
    }
    if (static_cast<uint32_t>(std::max(attrs.kernel[0], attrs.kernel[1])) > abi::kMaxKernel ||
        static_cast<uint32_t>(std::max(attrs.stride[0], attrs.stride[1])) > abi::kMaxStride ||
        static_cast<uint32_t>(std::max(attrs.dilation[0], attrs.dilation[1])) > abi::kMaxDilation) {
      reason = "kernel, stride or dilation beyond the fabric's limits";
      return false;
    }
    FabricLayer layer;
    layer.op = FabricOp::kConv;
    layer.name = node.name;
    layer.nodes = {i};
    layer.input = node.inputs[0];
    layer.output = node.outputs[0];
    layer.conv = &node;
    fuse_activation(layer);
    size_t j = 0;
    const Node* next = sole_consumer(layer.output, &j);
    if (next && next->op == OpKind::kMaxPool) {
      const auto& pool = std::get<PoolAttrs>(next->attrs);
      if (pool_fits(pool, abi::kMaxPoolKernel)) {
        layer.fused_pool = true;
        layer.pool = pool;
        layer.nodes.push_back(j);
        fused_.insert(j);
        layer.output = next->outputs[0];
      }
    }
    fabric_.insert(layer.output);
    producers_[layer.output] = FabricOp::kConv;
    p.layers.push_back(std::move(layer));
    return true;
  }

  bool take_pool(size_t i, Partition& p, std::string& reason) {
    const Node& node = graph_.nodes[i];
    FabricLayer layer;
    layer.name = node.name;
    layer.nodes = {i};
    layer.input = node.inputs[0];
    layer.output = node.outputs[0];
    if (node.op == OpKind::kGlobalAveragePool) {
      const int64_t h = dim(layer.input, 2), w = dim(layer.input, 3);
      layer.op = FabricOp::kAveragePool;
      layer.pool.kernel = {static_cast<int>(h), static_cast<int>(w)};
      layer.pool.stride = {1, 1};
    } else {
      layer.pool = std::get<PoolAttrs>(node.attrs);
      layer.op = node.op == OpKind::kMaxPool ? FabricOp::kMaxPool : FabricOp::kAveragePool;
      const bool padded = layer.pool.pads != std::array<int, 4>{0, 0, 0, 0};
      if (layer.op == FabricOp::kAveragePool && (layer.pool.ceil_mode || (padded && !layer.pool.count_include_pad))) {
        // The fabric averages over a constant window count only.
        reason = "average pooling whose window count varies (padding, ceil mode) stays on the host";
        return false;
      }
      if (layer.op == FabricOp::kAveragePool && padded) {
        reason = "padded average pooling stays on the host";
        return false;
      }
    }
    if (!pool_fits(layer.pool, abi::kMaxStandalonePool)) {
      reason = "pool window beyond the fabric's " + std::to_string(abi::kMaxStandalonePool) + "x" +
               std::to_string(abi::kMaxStandalonePool);
      return false;
    }
    fabric_.insert(layer.output);
    producers_[layer.output] = layer.op;
    p.layers.push_back(std::move(layer));
    return true;
  }

  bool take_add(size_t i, Partition& p, std::string& reason) {
    const Node& node = graph_.nodes[i];
    if (shapes_.at(node.inputs[0]) != shapes_.at(node.inputs[1]) || shapes_.at(node.inputs[0]).size() != 4) {
      reason = "broadcasting add stays on the host";
      return false;
    }
    FabricLayer layer;
    layer.op = FabricOp::kAdd;
    layer.name = node.name;
    layer.nodes = {i};
    layer.input = node.inputs[0];
    layer.input2 = node.inputs[1];
    layer.output = node.outputs[0];
    fuse_activation(layer);
    fabric_.insert(layer.output);
    producers_[layer.output] = FabricOp::kAdd;
    p.layers.push_back(std::move(layer));
    return true;
  }

  bool take_concat(size_t i, Partition& p, std::string& reason) {
    const Node& node = graph_.nodes[i];
    const int axis = std::get<AxisAttrs>(node.attrs).axis;
    const Shape& out = shapes_.at(node.outputs[0]);
    if (out.size() != 4 || (axis != 1 && axis != -3)) {
      reason = "only channel concatenation of NCHW tensors runs on the fabric";
      return false;
    }
    // Producers write straight into their slice; that needs each input made by a fabric layer
    // that requantises (conv, average pool, add), and used by no other concat.
    int64_t base = 0;
    for (const auto& in : node.inputs) {
      auto prod = producers_.find(in);
      if (prod == producers_.end() || prod->second == FabricOp::kMaxPool || p.slices.count(in) ||
          std::count(node.inputs.begin(), node.inputs.end(), in) > 1) {
        reason = "concat input '" + in + "' is not a requantising fabric layer's own output";
        return false;
      }
    }
    for (const auto& in : node.inputs) {
      p.slices[in] = {node.outputs[0], base};
      base += dim(in, 1);
    }
    p.concats.push_back(node.outputs[0]);
    fabric_.insert(node.outputs[0]);
    producers_[node.outputs[0]] = FabricOp::kConv;  // treated as a requantised buffer
    concat_outputs_.insert(node.outputs[0]);
    return true;
  }

  bool take(size_t i, Partition& p, std::string& reason) {
    const Node& node = graph_.nodes[i];
    for (const auto& in : node.inputs) {
      if (!in.empty() && !graph_.constant(in) && !fabric_.count(in)) {
        reason = "reads '" + in + "', which the fabric does not produce";
        return false;
      }
    }
    const Shape& out = shapes_.at(node.outputs[0]);
    switch (node.op) {
      case OpKind::kConv: return take_conv(i, p, reason);
      case OpKind::kMaxPool:
      case OpKind::kAveragePool:
      case OpKind::kGlobalAveragePool: return take_pool(i, p, reason);
      case OpKind::kAdd: return take_add(i, p, reason);
      case OpKind::kConcat: return take_concat(i, p, reason);
      case OpKind::kIdentity:
        if (out.size() != 4 || concat_outputs_.count(node.inputs[0])) {
          reason = "identity of a non-feature-map tensor";
          return false;
        }
        p.aliases[node.outputs[0]] = node.inputs[0];
        fabric_.insert(node.outputs[0]);
        if (producers_.count(node.inputs[0])) producers_[node.outputs[0]] = producers_[node.inputs[0]];
        return true;
      default: reason = std::string(op_kind_name(node.op)) + " runs on the host"; return false;
    }
  }

  const Graph& graph_;
  const std::map<std::string, Shape>& shapes_;
  std::map<std::string, std::vector<size_t>> consumers_;
  std::set<std::string> graph_outputs_;
  std::set<std::string> fabric_;               // tensors the fabric produces
  std::map<std::string, FabricOp> producers_;  // fabric tensor -> the op that made it
  std::set<std::string> concat_outputs_;
  std::set<size_t> fused_;
};

}  // namespace

Result<Partition> partition_graph(const Graph& graph, const std::map<std::string, Shape>& shapes) {
  if (graph.inputs.size() != 1) return Status::invalid_argument("the split needs a graph with one input");
  if (shapes.at(graph.inputs[0].name).size() != 4) {
    Partition p;
    p.fabric_input = graph.inputs[0].name;
    for (size_t n = 0; n < graph.nodes.size(); ++n) p.host_nodes.push_back(n);
    p.stop_reason = "the input is not an NCHW feature map";
    return p;
  }
  return Partitioner(graph, shapes).run();
}

}  // namespace tessera::plan
