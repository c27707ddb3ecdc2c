#include "accel/plan/compiler.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "accel/plan/node_macs.h"
#include "accel/plan/partition.h"
#include "accel/plan/pool_fusion.h"
#include "accel/quant/quantize.h"

namespace tessera::plan {
namespace {

uint32_t align_up(uint64_t v, uint32_t a) { return static_cast<uint32_t>((v + a - 1) / a * a); }

// Where a fabric tensor lives: a buffer in the arena and its first channel there.
struct BufferPlace {
  std::string buffer;
  int64_t channel_base = 0;
};

class Compiler {
 public:
  Compiler(const Graph& graph, const std::map<std::string, float>& ranges, const std::map<std::string, Shape>& shapes,
           const Partition& partition, const CompileOptions& options)
      : graph_(graph), ranges_(ranges), shapes_(shapes), p_(partition), options_(options) {}

  Result<CompiledModel> run() {
    CompiledModel out;
    out.input = p_.graph_input;
    if (p_.fabric_layers() == 0) {
      CompiledSegment host;
      host.graph = host_graph(p_.segments.empty() ? std::vector<size_t>{} : p_.segments.front().host_nodes, 0);
      out.segments.push_back(std::move(host));
      out.fabric_summary = "no fabric layers (" + reasons() + "); everything runs on the host";
      count_macs(out);
      return out;
    }
    out.has_fabric = true;
    TESSERA_RETURN_IF_ERROR(assign_scales());
    std::vector<abi::LayerDesc> all;
    for (size_t k = 0; k < p_.segments.size(); ++k) {
      const Segment& seg = p_.segments[k];
      CompiledSegment cs;
      cs.fabric = seg.fabric;
      if (!seg.fabric) {
        cs.graph = host_graph(seg.host_nodes, k);
      } else {
        TESSERA_RETURN_IF_ERROR(describe_segment(seg, cs));
        cs.first_layer = all.size();
        all.insert(all.end(), cs.program.layers.begin(), cs.program.layers.end());
        out.layer_names.insert(out.layer_names.end(), cs.layer_names.begin(), cs.layer_names.end());
      }
      out.segments.push_back(std::move(cs));
    }
    TESSERA_ASSIGN_OR_RETURN(out.plan, plan_layers_cached(all, out.layer_names, options_.board, options_.plan,
                                                          options_.model_name, options_.cache, &out.plan_from_cache));
    const CompiledSegment* previous = nullptr;
    for (CompiledSegment& cs : out.segments) {
      if (!cs.fabric) continue;
      CompiledProgram& prog = cs.program;
      for (size_t i = 0; i < prog.layers.size(); ++i) prog.layers[i] = out.plan.layers[cs.first_layer + i].desc;
      prog.model = program_model(out.plan, cs.first_layer, prog.layers.size());
      if (previous) {
        out.plan.add_handover(previous->output_names.front(), cs.input, previous->program.output_bytes(),
                              prog.input_bytes());
      }
      previous = &cs;
    }
    count_macs(out);
    out.fabric_summary = summary(out);
    return out;
  }

 private:
  BufferPlace place(const std::string& tensor) const {
    std::string t = tensor;
    while (p_.aliases.count(t)) t = p_.aliases.at(t);
    auto s = p_.slices.find(t);
    if (s != p_.slices.end()) {
      BufferPlace outer = place(s->second.concat);
      return {outer.buffer, outer.channel_base + s->second.channel_base};
    }
    return {t, 0};
  }

  // Scale groups: tensors sharing a buffer share a scale, and a max-pool keeps its input's
  // scale (max commutes with a positive scale). Each group's range is its members' largest.
  std::string scale_root(const std::string& tensor) const {
    std::string root = place(tensor).buffer;
    while (pool_parent_.count(root)) root = pool_parent_.at(root);
    return root;
  }

  float scale_of(const std::string& tensor) const { return scales_.at(scale_root(tensor)); }

  // Over every fabric segment at once, so a tensor handed from one segment to the next has one
  // scale on both sides (and any cut gives the bytes of the uncut program).
  Status assign_scales() {
    std::vector<std::string> members;
    for (const Segment& seg : p_.segments) {
      if (!seg.fabric) continue;
      members.push_back(seg.input);
      for (const FabricLayer& layer : seg.layers) {
        if (layer.op == FabricOp::kMaxPool) pool_parent_[place(layer.output).buffer] = place(layer.input).buffer;
        members.push_back(layer.output);
      }
    }
    for (const auto& c : p_.concats) members.push_back(c);
    for (const auto& [alias, source] : p_.aliases) members.push_back(alias);
    std::map<std::string, float> group_range;
    for (const std::string& t : members) {
      auto r = ranges_.find(t);
      if (r == ranges_.end()) return Status::internal("no calibrated range for tensor '" + t + "'");
      float& g = group_range[scale_root(t)];
      g = std::max(g, r->second);
    }
    for (const auto& [root, range] : group_range) scales_[root] = quant::scale_for_range(range);
    return Status::ok();
  }

  // One fabric segment's program: its arena, descriptors (pools folded into their producers),
  // tiles by the fixed rule (the plan replaces the convs'), input and output.
  Status describe_segment(const Segment& seg, CompiledSegment& cs) {
    layout_arena(seg);
    CompiledProgram& prog = cs.program;
    for (const FabricLayer& layer : seg.layers) {
      TESSERA_ASSIGN_OR_RETURN(abi::LayerDesc desc, describe(layer, prog));
      prog.layers.push_back(desc);
      cs.layer_names.push_back(layer.name);
    }
    pools_folded_ += fuse_pools_into_producers(prog.layers, cs.layer_names, offsets_.at(place(seg.output).buffer));
    for (size_t i = 0; i < prog.layers.size(); ++i) {
      if (Status s = choose_tiles(prog.layers[i]); !s.is_ok()) {
        return Status(s.code(), "layer '" + cs.layer_names[i] + "': " + s.message());
      }
    }
    const Shape& in = shapes_.at(seg.input);
    const Shape& fo = shapes_.at(seg.output);
    prog.header.arena_image_bytes = arena_bytes_;
    prog.header.input_offset = offsets_.at(place(seg.input).buffer);
    prog.header.output_offset = offsets_.at(place(seg.output).buffer);
    prog.input_c = static_cast<uint32_t>(in[1]);
    prog.input_h = static_cast<uint32_t>(in[2]);
    prog.input_w = static_cast<uint32_t>(in[3]);
    prog.input_scale = scale_of(seg.input);
    prog.output_c = static_cast<uint32_t>(fo[1]);
    prog.output_h = static_cast<uint32_t>(fo[2]);
    prog.output_w = static_cast<uint32_t>(fo[3]);
    prog.output_scale = scale_of(seg.output);
    cs.input = seg.input;
    cs.output_names = seg.output_names;
    return Status::ok();
  }

  void layout_arena(const Segment& seg) {
    offsets_.clear();
    std::vector<std::string> buffers = {place(seg.input).buffer};
    for (const FabricLayer& layer : seg.layers) buffers.push_back(place(layer.output).buffer);
    uint64_t offset = 0;
    for (const std::string& b : buffers) {
      if (offsets_.count(b)) continue;
      offsets_[b] = static_cast<uint32_t>(offset);
      offset = align_up(offset + static_cast<uint64_t>(shape_elements(shapes_.at(b))), abi::kArenaAlignBytes);
    }
    arena_bytes_ = static_cast<uint32_t>(offset);
  }

  // A fabric tensor as descriptors name it: its C x H x W, and where it lies in the arena (the
  // buffer's offset, its first channel there, the buffer's channel count).
  struct Slot {
    uint32_t c, h, w, offset, channel_base, channels_total;
  };
  Slot slot(const std::string& tensor) const {
    const Shape& s = shapes_.at(tensor);
    const BufferPlace p = place(tensor);
    return {static_cast<uint32_t>(s[1]),           static_cast<uint32_t>(s[2]),
            static_cast<uint32_t>(s[3]),           offsets_.at(p.buffer),
            static_cast<uint32_t>(p.channel_base), static_cast<uint32_t>(shapes_.at(p.buffer)[1])};
  }

  // Fills the input/output tensor fields of a descriptor.
  void place_io(abi::LayerDesc& d, const FabricLayer& layer) const {
    const Slot in = slot(layer.input);
    d.in_c = in.c;
    d.in_h = in.h;
    d.in_w = in.w;
    d.in_offset = in.offset;
    d.in_channel_base = in.channel_base;
    d.in_channels_total = in.channels_total;
    const Slot out = slot(layer.output);
    d.out_c = out.c;
    d.out_h = out.h;
    d.out_w = out.w;
    d.out_offset = out.offset;
    d.out_channel_base = out.channel_base;
    d.out_channels_total = out.channels_total;
    d.act_lo = -128;
    d.act_hi = 127;
  }

  static void set_pool(abi::LayerDesc& d, const PoolAttrs& pool, abi::PoolKind kind) {
    d.pool_kind = kind;
    d.pool_h = static_cast<uint32_t>(pool.kernel[0]);
    d.pool_w = static_cast<uint32_t>(pool.kernel[1]);
    d.pool_stride_h = static_cast<uint32_t>(pool.stride[0]);
    d.pool_stride_w = static_cast<uint32_t>(pool.stride[1]);
    d.pool_pad_top = static_cast<uint32_t>(pool.pads[0]);
    d.pool_pad_left = static_cast<uint32_t>(pool.pads[1]);
  }

  // Appends int32 values at a kParamAlignBytes boundary of the quant buffer; returns the word offset.
  static uint32_t append_quant(CompiledProgram& prog, const std::vector<int32_t>& values) {
    const size_t align_words = abi::kParamAlignBytes / 4;
    prog.quant.resize((prog.quant.size() + align_words - 1) / align_words * align_words, 0);
    const auto offset = static_cast<uint32_t>(prog.quant.size());
    prog.quant.insert(prog.quant.end(), values.begin(), values.end());
    return offset;
  }

  Result<abi::LayerDesc> describe(const FabricLayer& layer, CompiledProgram& prog) const {
    abi::LayerDesc d{};
    place_io(d, layer);
    const float s_in = scale_of(layer.input);
    const float s_out = scale_of(layer.output);
    switch (layer.op) {
      case FabricOp::kConv: TESSERA_RETURN_IF_ERROR(describe_conv(d, layer, s_in, s_out, prog)); break;
      case FabricOp::kMaxPool:
        d.op = abi::kOpPool;
        set_pool(d, layer.pool, abi::kPoolMax);
        break;
      case FabricOp::kAveragePool: {
        d.op = abi::kOpPool;
        set_pool(d, layer.pool, abi::kPoolAverage);
        const double count = static_cast<double>(layer.pool.kernel[0]) * layer.pool.kernel[1];
        const auto m = quant::quantize_multiplier(static_cast<double>(s_in) / (count * s_out));
        d.quant_offset = append_quant(prog, {m.multiplier, m.shift});
        break;
      }
      case FabricOp::kAdd: {
        d.op = abi::kOpAdd;
        const Slot in2 = slot(layer.input2);
        d.in2_offset = in2.offset;
        d.in2_channel_base = in2.channel_base;
        d.in2_channels_total = in2.channels_total;
        const double ma = static_cast<double>(s_in) / s_out;
        const double mb = static_cast<double>(scale_of(layer.input2)) / s_out;
        int exponent = 0;
        std::frexp(std::max(ma, mb), &exponent);
        const int shift = std::clamp(30 - exponent, abi::kMinShift, abi::kMaxShift);
        const auto fixed = [&](double m) {
          return static_cast<int32_t>(std::min<double>(std::llround(std::ldexp(m, shift)), INT32_MAX));
        };
        d.quant_offset = append_quant(prog, {fixed(ma), fixed(mb), shift});
        break;
      }
    }
    apply_activation(d, layer, s_out);
    return d;
  }

  static void apply_activation(abi::LayerDesc& d, const FabricLayer& layer, float s_out) {
    if (layer.relu) d.act_lo = 0;
    if (std::isfinite(layer.clip_max)) {
      const float hi = std::nearbyint(layer.clip_max / s_out);
      d.act_hi = static_cast<int32_t>(std::clamp(hi, -128.0f, 127.0f));
    }
  }

  Status describe_conv(abi::LayerDesc& d, const FabricLayer& layer, float s_in, float s_out,
                       CompiledProgram& prog) const {
    const Node& node = *layer.conv;
    const auto& attrs = std::get<ConvAttrs>(node.attrs);
    const Tensor& w = *graph_.constant(node.inputs[1]);
    const Tensor* b = node.inputs.size() > 2 && !node.inputs[2].empty() ? graph_.constant(node.inputs[2]) : nullptr;
    const Shape& conv_out = shapes_.at(node.outputs[0]);
    d.op = abi::kOpConv;
    d.conv_h = static_cast<uint32_t>(conv_out[2]);
    d.conv_w = static_cast<uint32_t>(conv_out[3]);
    d.kernel_h = static_cast<uint32_t>(attrs.kernel[0]);
    d.kernel_w = static_cast<uint32_t>(attrs.kernel[1]);
    d.stride_h = static_cast<uint32_t>(attrs.stride[0]);
    d.stride_w = static_cast<uint32_t>(attrs.stride[1]);
    d.pad_top = static_cast<uint32_t>(attrs.pads[0]);
    d.pad_left = static_cast<uint32_t>(attrs.pads[1]);
    d.dilation_h = static_cast<uint32_t>(attrs.dilation[0]);
    d.dilation_w = static_cast<uint32_t>(attrs.dilation[1]);
    d.groups = static_cast<uint32_t>(attrs.group);
    if (layer.fused_pool) set_pool(d, layer.pool, abi::kPoolMax);

    const quant::ChannelQuantized q = quant::quantize_per_channel(w);
    prog.weights.resize(align_up(prog.weights.size(), abi::kParamAlignBytes), 0);
    d.weight_offset = static_cast<uint32_t>(prog.weights.size());
    prog.weights.insert(prog.weights.end(), q.values.begin(), q.values.end());

    const size_t m = q.scales.size();
    std::vector<int32_t> quant_words(3 * m);
    for (size_t c = 0; c < m; ++c) {
      const double acc_scale = static_cast<double>(s_in) * q.scales[c];
      const double bias = b ? std::nearbyint(b->data[c] / acc_scale) : 0.0;
      quant_words[c] = static_cast<int32_t>(std::clamp(bias, -2147483648.0, 2147483647.0));
      const auto fm = quant::quantize_multiplier(acc_scale / s_out);
      quant_words[m + c] = fm.multiplier;
      quant_words[2 * m + c] = fm.shift;
    }
    d.quant_offset = append_quant(prog, quant_words);
    return Status::ok();
  }

  // The host segment k's nodes as a graph: inputs are what it reads from earlier segments (or
  // the graph input), outputs what later segments or the caller read.
  Graph host_graph(const std::vector<size_t>& nodes, size_t k) const {
    Graph host;
    host.name = graph_.name + "/host" + std::to_string(k);
    std::set<std::string> made, used, inputs;
    for (size_t n : nodes) {
      const Node& node = graph_.nodes[n];
      host.nodes.push_back(node);
      for (const auto& in : node.inputs) {
        if (in.empty()) continue;
        used.insert(in);
        if (!made.count(in) && !graph_.constant(in) && !inputs.count(in)) {
          inputs.insert(in);
          Shape shape = shapes_.at(in);
          if (!shape.empty()) shape[0] = -1;
          host.inputs.push_back({in, shape});
        }
      }
      made.insert(node.outputs.begin(), node.outputs.end());
    }
    std::set<std::string> read_later;
    for (size_t j = k + 1; j < p_.segments.size(); ++j) {
      const Segment& later = p_.segments[j];
      if (later.fabric) {
        read_later.insert(later.input);
        for (const FabricLayer& layer : later.layers) read_later.insert({layer.input, layer.input2});
      }
      for (size_t n : later.host_nodes) read_later.insert(graph_.nodes[n].inputs.begin(), graph_.nodes[n].inputs.end());
    }
    for (const auto& o : graph_.outputs) {
      if (made.count(o.name)) host.outputs.push_back(o);
    }
    for (const std::string& t : made) {
      if (!read_later.count(t) ||
          std::any_of(host.outputs.begin(), host.outputs.end(), [&](const ValueInfo& o) { return o.name == t; })) {
        continue;
      }
      Shape shape = shapes_.at(t);
      if (!shape.empty()) shape[0] = -1;
      host.outputs.push_back({t, shape});
    }
    for (const auto& name : used) {
      if (const Tensor* c = graph_.constant(name)) host.constants[name] = *c;
    }
    return host;
  }

  std::string reasons() const {
    std::string s;
    for (const std::string& r : p_.host_reasons) s += (s.empty() ? "" : "; ") + r;
    return s.empty() ? "none of its nodes is a fabric layer kind" : s;
  }

  // Where the model runs: MACs on each side, segments, hand-overs, host ops' modeled time.
  void count_macs(CompiledModel& out) const {
    Placement& pl = out.placement;
    std::set<size_t> on_fabric;
    for (const Segment& seg : p_.segments) {
      for (const FabricLayer& layer : seg.layers) on_fabric.insert(layer.nodes.begin(), layer.nodes.end());
      if (!seg.fabric) {
        for (size_t n : seg.host_nodes) {
          pl.host_ops.push_back(host_op_time(graph_, graph_.nodes[n], shapes_, options_.board));
          pl.host_ops.back().index = n;
        }
      }
    }
    for (size_t n = 0; n < graph_.nodes.size(); ++n) {
      const uint64_t macs = node_macs(graph_, graph_.nodes[n], shapes_);
      (on_fabric.count(n) ? pl.fabric_macs : pl.host_macs) += macs;
    }
    pl.fabric_segments = p_.fabric_segments();
    pl.handovers = p_.handovers();
    pl.host_modeled = options_.board.host_gflops > 0 && options_.board.host_gbps > 0;
    if (out.has_fabric) pl.fabric_us = out.plan.seconds_per_image() * 1e6;
  }

  std::string summary(const CompiledModel& out) const {
    const size_t segments = out.fabric_segments();
    std::string s = std::to_string(out.layer_names.size()) + " fabric layers (" + out.layer_names.front() + " .. " +
                    out.layer_names.back() + ") in " + std::to_string(segments) + " segment" +
                    (segments == 1 ? "" : "s") + ", " + std::to_string(out.handovers()) + " hand-over" +
                    (out.handovers() == 1 ? "" : "s") + "; host:";
    size_t host_nodes = 0;
    for (const Segment& seg : p_.segments) {
      for (size_t n : seg.host_nodes) {
        s += std::string(" ") + op_kind_name(graph_.nodes[n].op);
        ++host_nodes;
      }
    }
    if (host_nodes == 0) s += " nothing";
    if (pools_folded_ > 0) {
      s += "; " + std::to_string(pools_folded_) + " max-pool(s) after a concat folded into the convs that write it";
    }
    if (!p_.host_reasons.empty()) s += "; on the host: " + reasons();
    return s;
  }

  const Graph& graph_;
  const std::map<std::string, float>& ranges_;
  const std::map<std::string, Shape>& shapes_;
  const Partition& p_;
  const CompileOptions& options_;
  std::map<std::string, std::string> pool_parent_;
  std::map<std::string, float> scales_;
  std::map<std::string, uint32_t> offsets_;
  uint32_t arena_bytes_ = 0;
  uint32_t pools_folded_ = 0;  // standalone max-pools folded into their producers (pool_fusion.h)
};

}  // namespace

Status choose_tiles(abi::LayerDesc& d) {
  d.tile_m = std::min<uint32_t>(d.out_c, abi::kMaxTileM);
  d.tile_n = 1;
  if (d.op == abi::kOpConv) {
    const uint32_t out_per_group = d.out_c / d.groups;
    const uint32_t in_per_group = d.in_c / d.groups;
    // Largest channel tile that covers whole groups or lies inside one.
    while (d.groups > 1 && d.tile_m > 1 && out_per_group % d.tile_m != 0 && d.tile_m % out_per_group != 0) --d.tile_m;
    const uint32_t groups_in_tile = d.tile_m > out_per_group ? d.tile_m / out_per_group : 1;
    d.tile_n = std::max<uint32_t>(
        1, std::min(in_per_group, groups_in_tile > 1 ? abi::kMaxVector / groups_in_tile : abi::kMaxTileN));
  }
  d.tile_r = std::min<uint32_t>(d.out_h, abi::kMaxTileR);
  d.tile_c = std::min<uint32_t>(d.out_w, abi::kMaxTileC);
  if (d.op == abi::kOpAdd) {
    // kernels/accel_add.h streams the channel slice flat in chunks of tile_r x tile_c bytes,
    // ping-ponged: chunks of an eighth of the block (so reads, lanes and writes overlap), in
    // multiples of 256 bytes between 4 KiB and abi::kAddChunkBytes, whatever the plane.
    const uint64_t block = static_cast<uint64_t>(d.out_c) * d.out_h * d.out_w;
    const uint64_t chunk = std::clamp<uint64_t>((block / 8 + 255) / 256 * 256, 4096, abi::kAddChunkBytes);
    d.tile_c = 256;
    d.tile_r = static_cast<uint32_t>(chunk / 256);
  }
  // Shrink rows, then columns, then input channels, then output channels until it fits. A pool
  // keeps whole output rows as long as one row fits (kernels/accel_pool.h reads whole input rows
  // as one run per channel then).
  while (!abi::layer_fits(d)) {
    if (d.tile_r > 1 && (d.tile_r >= d.tile_c || d.op == abi::kOpPool)) {
      d.tile_r = (d.tile_r + 1) / 2;
    } else if (d.tile_c > 1) {
      d.tile_c = (d.tile_c + 1) / 2;
    } else if (d.tile_n > 1) {
      d.tile_n = (d.tile_n + 1) / 2;
    } else if (d.tile_m > 1 && (d.groups == 1 || d.op == abi::kOpPool)) {
      d.tile_m = (d.tile_m + 1) / 2;
    } else {
      return Status::invalid_argument("no tile fits the fabric's on-chip buffers (kernel " +
                                      std::to_string(d.kernel_h) + "x" + std::to_string(d.kernel_w) + ")");
    }
  }
  return Status::ok();
}

Result<CompiledModel> compile_model(const Graph& graph, const std::map<std::string, float>& ranges,
                                    const CompileOptions& options) {
  if (options.plan.space != SearchSpace::kKernel) {
    return Status::invalid_argument("compile_model: only the kernel's search space gives executable tiles");
  }
  TESSERA_ASSIGN_OR_RETURN(auto shapes, infer_shapes(graph, 1));
  TESSERA_ASSIGN_OR_RETURN(Partition partition, partition_graph(graph, shapes, options.partition));
  return Compiler(graph, ranges, shapes, partition, options).run();
}

std::vector<abi::LayerDesc> CompiledModel::fabric_layers() const {
  std::vector<abi::LayerDesc> all;
  for (const CompiledSegment& cs : segments) all.insert(all.end(), cs.program.layers.begin(), cs.program.layers.end());
  return all;
}

size_t CompiledModel::fabric_segments() const {
  return static_cast<size_t>(
      std::count_if(segments.begin(), segments.end(), [](const CompiledSegment& cs) { return cs.fabric; }));
}

std::map<std::string, float> unit_ranges(const Graph& graph) {
  std::map<std::string, float> ranges;
  for (const auto& in : graph.inputs) ranges[in.name] = 1.0f;
  for (const Node& n : graph.nodes) {
    for (const std::string& o : n.outputs) ranges[o] = 1.0f;
  }
  return ranges;
}

}  // namespace tessera::plan
