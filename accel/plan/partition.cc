#include "accel/plan/partition.h"

#include <algorithm>
#include <optional>

#include "accel/graph/passes.h"
#include "kernels/kernel_abi.h"

namespace tessera::plan {
namespace {

// A step of the graph as the split sees it: a fabric layer (with what is fused into it), a
// channel concat or an alias the fabric can take, or a node only the host runs.
struct Unit {
  enum class Kind { kLayer, kConcat, kAlias, kHost } kind = Kind::kHost;
  FabricLayer layer;                // kLayer
  std::vector<size_t> nodes;        // graph nodes covered, in order
  std::vector<std::string> reads;   // tensors read that are not constants
  std::vector<std::string> writes;  // tensors made that others may read
  bool split_before = false;        // a fabric segment must start here (PartitionOptions)
  std::string host_reason;          // kHost of a kind the fabric has: why it stays on the host
};

// What a run of units [a, b) would be as one fabric segment.
struct SegmentShape {
  std::string input, output;
  std::vector<std::string> output_names;
};

class Partitioner {
 public:
  Partitioner(const Graph& graph, const std::map<std::string, Shape>& shapes, const PartitionOptions& options)
      : graph_(graph), shapes_(shapes), options_(options), consumers_(tensor_consumers(graph)) {
    for (const auto& o : graph.outputs) graph_outputs_.insert(o.name);
  }

  Partition run() {
    Partition p;
    p.graph_input = graph_.inputs[0].name;
    build_units();
    for (const Unit& u : units_) {
      for (const std::string& r : u.reads) readers_[r].push_back(&u - units_.data());
    }
    size_t i = 0;
    while (i < units_.size()) {
      if (units_[i].kind == Unit::Kind::kHost) {
        to_host(p, i++);
        continue;
      }
      size_t end = i + 1;  // the run of fabric units from i, up to a forced split
      while (end < units_.size() && units_[end].kind != Unit::Kind::kHost && !units_[end].split_before) ++end;
      i = take_run(p, i, end);
    }
    return p;
  }

 private:
  std::string node_name(size_t i) const {
    return "node '" + graph_.nodes[i].name + "' (" + op_kind_name(graph_.nodes[i].op) + ")";
  }

  // Fabric segments from the run of fabric units [a, end): the longest prefix that makes a
  // segment, then the rest; a unit that starts no segment goes to the host. Returns end.
  size_t take_run(Partition& p, size_t a, size_t end) {
    while (a < end) {
      size_t best = a;
      std::optional<SegmentShape> best_shape;
      std::string reason;
      for (size_t b = a + 1; b <= end; ++b) {
        std::string why;
        if (auto shape = check(a, b, why)) {
          best = b;
          best_shape = std::move(shape);
        } else if (b == a + 1) {
          reason = why;
        }
      }
      if (!best_shape) {
        p.host_reasons.push_back(node_name(units_[a].nodes.front()) + ": " + reason);
        to_host(p, a++);
        continue;
      }
      commit(p, a, best, std::move(*best_shape));
      a = best;
    }
    return end;
  }

  void to_host(Partition& p, size_t i) {
    if (p.segments.empty() || p.segments.back().fabric) p.segments.emplace_back();
    Segment& s = p.segments.back();
    s.host_nodes.insert(s.host_nodes.end(), units_[i].nodes.begin(), units_[i].nodes.end());
    if (!units_[i].host_reason.empty())
      p.host_reasons.push_back(node_name(units_[i].nodes.front()) + ": " + units_[i].host_reason);
  }

  void commit(Partition& p, size_t a, size_t b, SegmentShape shape) {
    Segment s;
    s.fabric = true;
    s.input = std::move(shape.input);
    s.output = std::move(shape.output);
    s.output_names = std::move(shape.output_names);
    for (size_t i = a; i < b; ++i) {
      const Unit& u = units_[i];
      const Node& node = graph_.nodes[u.nodes.front()];
      switch (u.kind) {
        case Unit::Kind::kLayer: s.layers.push_back(u.layer); break;
        case Unit::Kind::kConcat: {
          int64_t base = 0;
          for (const auto& in : node.inputs) {
            p.slices[in] = {node.outputs[0], base};
            base += shapes_.at(in)[1];
          }
          p.concats.push_back(node.outputs[0]);
          break;
        }
        case Unit::Kind::kAlias: p.aliases[node.outputs[0]] = node.inputs[0]; break;
        case Unit::Kind::kHost: break;
      }
    }
    p.segments.push_back(std::move(s));
  }

  // Whether units [a, b) make one fabric segment: at least one layer, one tensor read from
  // outside, one buffer read outside (or a graph output), concat inputs made inside by
  // requantising layers.
  std::optional<SegmentShape> check(size_t a, size_t b, std::string& why) const {
    std::set<std::string> produced, inputs, sliced, concat_outputs;
    std::map<std::string, std::string> alias;
    std::map<std::string, FabricOp> producer;
    size_t layers = 0;
    for (size_t i = a; i < b; ++i) {
      const Unit& u = units_[i];
      for (const std::string& r : u.reads) {
        if (!produced.count(r)) inputs.insert(r);
      }
      const Node& node = graph_.nodes[u.nodes.front()];
      if (u.kind == Unit::Kind::kLayer) {
        ++layers;
        producer[u.layer.output] = u.layer.op;
      } else if (u.kind == Unit::Kind::kConcat) {
        for (const auto& in : node.inputs) {
          auto prod = producer.find(in);
          if (prod == producer.end() || prod->second == FabricOp::kMaxPool || sliced.count(in) || alias.count(in) ||
              std::count(node.inputs.begin(), node.inputs.end(), in) > 1) {
            why = "concat input '" + in + "' is not a requantising fabric layer's own output in the segment";
            return std::nullopt;
          }
        }
        sliced.insert(node.inputs.begin(), node.inputs.end());
        producer[node.outputs[0]] = FabricOp::kConv;  // a requantised buffer
        concat_outputs.insert(node.outputs[0]);
      } else if (u.kind == Unit::Kind::kAlias) {
        if (concat_outputs.count(node.inputs[0])) {
          why = "an identity of a concat output";
          return std::nullopt;
        }
        alias[node.outputs[0]] = node.inputs[0];
        if (producer.count(node.inputs[0])) producer[node.outputs[0]] = producer[node.inputs[0]];
      }
      produced.insert(u.writes.begin(), u.writes.end());
    }
    if (layers == 0) {
      why = "no fabric layer of its own";
      return std::nullopt;
    }
    if (inputs.size() != 1) {
      why = "reads " + std::to_string(inputs.size()) + " tensors from outside a fabric segment (one can enter)";
      return std::nullopt;
    }
    SegmentShape shape;
    shape.input = *inputs.begin();
    if (shapes_.at(shape.input).size() != 4) {
      why = "its input is not an NCHW feature map";
      return std::nullopt;
    }
    std::set<std::string> roots;
    for (const std::string& t : produced) {
      bool read_outside = graph_outputs_.count(t) > 0;
      if (auto r = readers_.find(t); r != readers_.end()) {
        for (size_t reader : r->second) read_outside = read_outside || reader < a || reader >= b;
      }
      if (!read_outside) continue;
      shape.output_names.push_back(t);
      std::string root = t;
      while (alias.count(root)) root = alias.at(root);
      roots.insert(root);
    }
    if (roots.size() != 1 || sliced.count(*roots.begin()) || !produced.count(*roots.begin())) {
      why = "a fabric segment would hand " + std::to_string(roots.size()) + " tensors (or a concat slice) on";
      return std::nullopt;
    }
    shape.output = *roots.begin();
    return shape;
  }

  // The node that alone consumes `tensor`, if there is exactly one and it is not also an output.
  const Node* sole_consumer(const std::string& tensor, size_t* index) const {
    if (graph_outputs_.count(tensor)) return nullptr;
    auto it = consumers_.find(tensor);
    if (it == consumers_.end() || it->second.size() != 1) return nullptr;
    *index = it->second[0];
    return &graph_.nodes[*index];
  }

  bool host_only(size_t node) const { return options_.host_only.count(graph_.nodes[node].name) > 0; }

  int64_t dim(const std::string& tensor, int d) const { return shapes_.at(tensor)[static_cast<size_t>(d)]; }

  // Fuses node j into the unit when it is the unit's output's sole consumer and not kept apart.
  bool fuse(Unit& u, size_t j) {
    if (host_only(j)) return false;
    fused_.insert(j);
    u.nodes.push_back(j);
    u.layer.nodes.push_back(j);
    u.layer.output = graph_.nodes[j].outputs[0];
    return true;
  }

  // Activation fused into a conv or add: ReLU, or Clip with min 0 (ReLU6) / no min.
  void fuse_activation(Unit& u) {
    size_t j = 0;
    const Node* next = sole_consumer(u.layer.output, &j);
    if (!next || host_only(j)) return;
    bool relu = false;
    float clip_max = std::numeric_limits<float>::infinity();
    if (next->op == OpKind::kRelu) {
      relu = true;
    } else if (next->op == OpKind::kClip) {
      const auto& clip = std::get<ClipAttrs>(next->attrs);
      if (clip.min == 0.0f) {
        relu = true;
      } else if (clip.min > -1e30f) {
        return;  // a general clip stays unfused
      }
      clip_max = clip.max;
    } else {
      return;
    }
    u.layer.relu = relu;
    u.layer.clip_max = clip_max;
    fuse(u, j);
  }

  static bool pool_fits(const PoolAttrs& pool, uint32_t max_kernel) {
    return static_cast<uint32_t>(pool.kernel[0]) <= max_kernel && static_cast<uint32_t>(pool.kernel[1]) <= max_kernel &&
           pool.pads[0] < pool.kernel[0] && pool.pads[1] < pool.kernel[1];
  }

  bool conv_unit(size_t i, Unit& u) {
    const Node& node = graph_.nodes[i];
    const auto& attrs = std::get<ConvAttrs>(node.attrs);
    if (!graph_.constant(node.inputs[1]) ||
        (node.inputs.size() > 2 && !node.inputs[2].empty() && !graph_.constant(node.inputs[2]))) {
      u.host_reason = "weights that are not constants stay on the host";
      return false;
    }
    if (static_cast<uint32_t>(std::max(attrs.kernel[0], attrs.kernel[1])) > abi::kMaxKernel ||
        static_cast<uint32_t>(std::max(attrs.stride[0], attrs.stride[1])) > abi::kMaxStride ||
        static_cast<uint32_t>(std::max(attrs.dilation[0], attrs.dilation[1])) > abi::kMaxDilation) {
      u.host_reason = "kernel, stride or dilation beyond the fabric's limits";
      return false;
    }
    u.layer.op = FabricOp::kConv;
    u.layer.conv = &node;
    fuse_activation(u);
    size_t j = 0;
    const Node* next = sole_consumer(u.layer.output, &j);
    if (next && next->op == OpKind::kMaxPool && pool_fits(std::get<PoolAttrs>(next->attrs), abi::kMaxPoolKernel) &&
        fuse(u, j)) {
      u.layer.fused_pool = true;
      u.layer.pool = std::get<PoolAttrs>(next->attrs);
    }
    return true;
  }

  bool pool_unit(size_t i, Unit& u) {
    const Node& node = graph_.nodes[i];
    FabricLayer& layer = u.layer;
    if (node.op == OpKind::kGlobalAveragePool) {
      if (auto in = shapes_.find(layer.input); in == shapes_.end() || in->second.size() != 4) return false;
      layer.op = FabricOp::kAveragePool;
      layer.pool.kernel = {static_cast<int>(dim(layer.input, 2)), static_cast<int>(dim(layer.input, 3))};
      layer.pool.stride = {1, 1};
    } else {
      layer.pool = std::get<PoolAttrs>(node.attrs);
      layer.op = node.op == OpKind::kMaxPool ? FabricOp::kMaxPool : FabricOp::kAveragePool;
      const bool padded = layer.pool.pads != std::array<int, 4>{0, 0, 0, 0};
      if (layer.op == FabricOp::kAveragePool && (layer.pool.ceil_mode || (padded && !layer.pool.count_include_pad))) {
        // The fabric averages over a constant window count only.
        u.host_reason = "average pooling whose window count varies (padding, ceil mode) stays on the host";
        return false;
      }
      if (layer.op == FabricOp::kAveragePool && padded) {
        u.host_reason = "padded average pooling stays on the host";
        return false;
      }
    }
    if (!pool_fits(layer.pool, abi::kMaxStandalonePool)) {
      u.host_reason = "pool window beyond the fabric's " + std::to_string(abi::kMaxStandalonePool) + "x" +
                      std::to_string(abi::kMaxStandalonePool);
      return false;
    }
    return true;
  }

  bool add_unit(size_t i, Unit& u) {
    const Node& node = graph_.nodes[i];
    // Constants first: they have no inferred shape (an add of a constant runs on the host).
    if (node.inputs.size() != 2 || graph_.constant(node.inputs[0]) || graph_.constant(node.inputs[1]) ||
        shapes_.at(node.inputs[0]) != shapes_.at(node.inputs[1]) || shapes_.at(node.inputs[0]).size() != 4) {
      u.host_reason = "an add of a constant or a broadcasting add stays on the host";
      return false;
    }
    u.layer.op = FabricOp::kAdd;
    u.layer.input2 = node.inputs[1];
    fuse_activation(u);
    return true;
  }

  // The unit that starts at node i: kLayer / kConcat / kAlias when the fabric can run the node
  // (wherever its inputs come from: check() decides the segments), else kHost.
  Unit make_unit(size_t i) {
    const Node& node = graph_.nodes[i];
    Unit u;
    u.nodes = {i};
    u.split_before = options_.split_before.count(node.name) > 0;
    u.layer.name = node.name;
    u.layer.nodes = {i};
    u.layer.input = node.inputs.empty() ? std::string() : node.inputs[0];
    u.layer.output = node.outputs[0];
    const Shape& out = shapes_.at(node.outputs[0]);
    bool fabric = false;
    if (host_only(i)) {
      u.host_reason = "kept on the host (PartitionOptions::host_only)";
    } else {
      switch (node.op) {
        case OpKind::kConv: fabric = conv_unit(i, u); break;
        case OpKind::kMaxPool:
        case OpKind::kAveragePool:
        case OpKind::kGlobalAveragePool: fabric = pool_unit(i, u); break;
        case OpKind::kAdd: fabric = add_unit(i, u); break;
        case OpKind::kConcat: {
          const int axis = std::get<AxisAttrs>(node.attrs).axis;
          fabric = out.size() == 4 && (axis == 1 || axis == -3);
          if (!fabric) u.host_reason = "only channel concatenation of NCHW tensors runs on the fabric";
          u.kind = Unit::Kind::kConcat;
          break;
        }
        case OpKind::kIdentity:
          fabric = out.size() == 4;
          u.kind = Unit::Kind::kAlias;
          break;
        default: break;
      }
    }
    if (!fabric) {
      u.kind = Unit::Kind::kHost;
      u.nodes.resize(1);
      for (size_t j = 1; j < u.layer.nodes.size(); ++j) fused_.erase(u.layer.nodes[j]);
    } else if (u.kind == Unit::Kind::kHost) {
      u.kind = Unit::Kind::kLayer;
    }
    for (size_t n : u.nodes) {
      for (const auto& in : graph_.nodes[n].inputs) {
        if (!in.empty() && !graph_.constant(in) && !produced_by_unit(u, in)) u.reads.push_back(in);
      }
    }
    if (u.kind == Unit::Kind::kLayer) {
      u.writes = {u.layer.output};
    } else {
      for (size_t n : u.nodes)
        u.writes.insert(u.writes.end(), graph_.nodes[n].outputs.begin(), graph_.nodes[n].outputs.end());
    }
    return u;
  }

  bool produced_by_unit(const Unit& u, const std::string& tensor) const {
    for (size_t n : u.nodes) {
      const auto& outs = graph_.nodes[n].outputs;
      if (std::find(outs.begin(), outs.end(), tensor) != outs.end()) return true;
    }
    return false;
  }

  void build_units() {
    for (size_t i = 0; i < graph_.nodes.size(); ++i) {
      if (fused_.count(i)) continue;
      units_.push_back(make_unit(i));
    }
  }

  const Graph& graph_;
  const std::map<std::string, Shape>& shapes_;
  const PartitionOptions& options_;
  std::map<std::string, std::vector<size_t>> consumers_;
  std::set<std::string> graph_outputs_;
  std::set<size_t> fused_;
  std::vector<Unit> units_;
  std::map<std::string, std::vector<size_t>> readers_;  // tensor -> units that read it
};

}  // namespace

size_t Partition::fabric_segments() const {
  return static_cast<size_t>(
      std::count_if(segments.begin(), segments.end(), [](const Segment& s) { return s.fabric; }));
}

size_t Partition::fabric_layers() const {
  size_t n = 0;
  for (const Segment& s : segments) n += s.layers.size();
  return n;
}

size_t Partition::handovers() const { return fabric_segments() > 0 ? fabric_segments() - 1 : 0; }

Result<Partition> partition_graph(const Graph& graph, const std::map<std::string, Shape>& shapes,
                                  const PartitionOptions& options) {
  if (graph.inputs.size() != 1) return Status::invalid_argument("the split needs a graph with one input");
  for (const auto& names : {options.host_only, options.split_before}) {
    for (const std::string& name : names) {
      if (std::none_of(graph.nodes.begin(), graph.nodes.end(), [&](const Node& n) { return n.name == name; })) {
        return Status::invalid_argument("partition option names node '" + name + "', which the graph does not have");
      }
    }
  }
  return Partitioner(graph, shapes, options).run();
}

}  // namespace tessera::plan
