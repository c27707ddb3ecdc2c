// The float32 reference executor: validates, infers shapes once, then walks the nodes in order,
// freeing each activation after its last use. A Relu or Clip that is the only reader of a Conv's
// or an Add's result runs inside that op (oneDNN's post-op, or on the result while it is in cache)
// instead of as its own pass over memory. A batch-separable graph with N > 1 runs as two
// half batches on two threads when the host's thread budget has one to spare (host_threads.h).
#include "accel/host/reference_executor.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <new>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "accel/graph/op_shapes.h"
#include "accel/host/host_threads.h"
#include "accel/host/model_cache.h"
#include "accel/host/reference_batch_split.h"
#include "accel/host/reference_ops.h"

namespace tessera::host {
namespace {

using TensorMap = std::map<std::string, Tensor>;

// An activation node run inside the node before it.
struct Fused {
  size_t node;  // the Relu or Clip node, which is skipped
  Activation activation;
};

// Facts about the graph computed once per run.
struct RunPlan {
  std::map<std::string, size_t> last_use;  // activation -> index of the last node reading it
  std::set<std::string> graph_outputs;
  std::map<size_t, Fused> fused;  // Conv or Add node -> the activation it runs
  std::set<size_t> skipped;       // nodes run inside another
  ModelCache* cache = nullptr;    // the caller's per-model cache, or none
};

// The activation `node` is, when it can run inside the op producing its input.
std::optional<Activation> as_activation(const Node& node) {
  if (node.inputs.size() != 1 || node.outputs.size() != 1) return std::nullopt;
  if (node.op == OpKind::kRelu) return Activation{Activation::Kind::kRelu};
  if (node.op == OpKind::kClip) {
    const ClipAttrs clip = node_attrs<ClipAttrs>(node);
    return Activation{Activation::Kind::kClip, clip.min, clip.max};
  }
  return std::nullopt;
}

RunPlan make_plan(const Graph& graph, ModelCache* cache) {
  RunPlan plan;
  plan.cache = cache;
  std::map<std::string, std::vector<size_t>> readers;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    for (const std::string& name : graph.nodes[i].inputs) {
      if (name.empty()) continue;
      plan.last_use[name] = i;
      readers[name].push_back(i);
    }
  }
  for (const ValueInfo& out : graph.outputs) plan.graph_outputs.insert(out.name);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    if ((node.op != OpKind::kConv && node.op != OpKind::kAdd) || node.outputs.size() != 1) continue;
    const std::string& out = node.outputs[0];
    const auto it = readers.find(out);
    if (plan.graph_outputs.count(out) != 0 || it == readers.end() || it->second.size() != 1) continue;
    const size_t reader = it->second.front();
    if (const auto act = as_activation(graph.nodes[reader])) {
      plan.fused[i] = Fused{reader, *act};
      plan.skipped.insert(reader);
    }
  }
  return plan;
}

// The tensors one run can read: produced activations (owned), graph inputs, constants.
class Activations {
 public:
  Activations(const Graph& graph, const std::map<std::string, const Tensor*>& inputs)
      : graph_(graph), inputs_(inputs) {}

  const Tensor* find(const std::string& name) const {
    if (auto it = owned_.find(name); it != owned_.end()) return &it->second;
    if (auto it = inputs_.find(name); it != inputs_.end()) return it->second;
    return graph_.constant(name);
  }

  // The tensor by value: moved out when `last` (its final reader) and owned, else copied.
  Tensor take(const std::string& name, bool last) {
    if (auto it = owned_.find(name); it != owned_.end() && last) {
      Tensor t = std::move(it->second);
      owned_.erase(it);
      return t;
    }
    return *find(name);
  }

  // Whether the activation's data is in NHWC order (its shape stays N,C,H,W).
  bool nhwc(const std::string& name) const { return nhwc_.count(name) != 0; }

  void put(const std::string& name, Tensor t, bool nhwc) {
    owned_[name] = std::move(t);
    if (nhwc) nhwc_.insert(name);
  }
  void release(const std::string& name) {
    owned_.erase(name);
    nhwc_.erase(name);
  }

 private:
  const Graph& graph_;
  const std::map<std::string, const Tensor*>& inputs_;
  TensorMap owned_;
  std::set<std::string> nhwc_;
};

// How a node treats NHWC operands: `as_is`, it takes them as they are (its result NHWC when
// `out_nhwc`); else each is copied to NCHW first. oneDNN's convs work in NHWC, so their results
// are NHWC and stay so through the ops that have an NHWC form (activations, same-shape Add, max
// pooling, channel Concat, global pooling); the rest see NCHW.
struct Layouts {
  bool as_is;
  bool out_nhwc;
};

Layouts node_layouts(const Node& node, const std::vector<const Tensor*>& ops, const Activations& acts) {
  auto is = [&](size_t i) { return i < node.inputs.size() && !node.inputs[i].empty() && acts.nhwc(node.inputs[i]); };
  bool any = false, all = !node.inputs.empty();
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    any = any || is(i);
    all = all && is(i) && ops[i]->rank() == 4;
  }
  switch (node.op) {
    case OpKind::kConv:
      if (conv2d_prefers_nhwc() && ops[0]->rank() == 4) return {true, true};
      break;
    case OpKind::kRelu:
    case OpKind::kClip:
    case OpKind::kSigmoid:
    case OpKind::kHardSigmoid:
    case OpKind::kHardSwish:
    case OpKind::kGelu:
    case OpKind::kIdentity: return {true, is(0)};  // elementwise: any order
    case OpKind::kAdd:
      if (all && ops.size() == 2 && ops[0]->shape == ops[1]->shape) return {true, true};
      break;
    case OpKind::kMaxPool:
      if (all) return {true, true};
      break;
    case OpKind::kGlobalAveragePool:
      if (all) return {true, false};  // [N,C,1,1]: the same data in either order
      break;
    case OpKind::kConcat:
      if (all && (node_axis(node) == 1 || node_axis(node) == -3)) return {true, true};
      break;
    default: break;
  }
  return {!any, false};
}

// Runs one node. `full_shapes`, when given, are the whole batch's shapes: this run is a part of
// the batch, and Reshape targets keep the part's own dim 0.
// Runs one node; `out_nhwc` says whether its result is in NHWC order.
Result<Tensor> run_node(const Node& node, size_t index, Activations& acts, const RunPlan& plan,
                        const std::map<std::string, Shape>* full_shapes, bool& out_nhwc) {
  std::vector<const Tensor*> ops(node.inputs.size(), nullptr);
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (node.inputs[i].empty()) continue;
    ops[i] = acts.find(node.inputs[i]);
    if (ops[i] == nullptr) return Status::internal("input '" + node.inputs[i] + "' is not available");
  }
  const Layouts layouts = node_layouts(node, ops, acts);
  out_nhwc = layouts.out_nhwc;
  const bool nhwc0 = layouts.as_is && !node.inputs.empty() && acts.nhwc(node.inputs[0]);
  std::vector<Tensor> copies;  // NCHW copies of NHWC operands, for an op without an NHWC form
  copies.reserve(ops.size());
  bool copied0 = false;
  for (size_t i = 0; i < ops.size() && !layouts.as_is; ++i) {
    if (ops[i] == nullptr || !acts.nhwc(node.inputs[i])) continue;
    copies.push_back(nhwc_to_nchw(*ops[i]));
    ops[i] = &copies.back();
    copied0 = copied0 || i == 0;
  }
  auto opt = [&](size_t i) { return i < ops.size() ? ops[i] : nullptr; };
  // Operand 0 by value, moved when nothing reads it later.
  auto take0 = [&]() {
    if (copied0) return std::move(copies.front());
    const std::string& name = node.inputs[0];
    const bool last = plan.last_use.at(name) == index && plan.graph_outputs.count(name) == 0 &&
                      std::count(node.inputs.begin(), node.inputs.end(), name) == 1;
    return acts.take(name, last);
  };
  const auto fused = plan.fused.find(index);
  const Activation activation = fused == plan.fused.end() ? Activation{} : fused->second.activation;
  switch (node.op) {
    case OpKind::kConv:
      return conv2d(*ops[0], *ops[1], opt(2), std::get<ConvAttrs>(node.attrs),
                    ConvOptions{activation, plan.cache, nhwc0, layouts.out_nhwc});
    case OpKind::kRelu: return relu(take0());
    case OpKind::kClip: return clip(take0(), node_attrs<ClipAttrs>(node));
    case OpKind::kIdentity: return identity(take0());
    case OpKind::kMaxPool:
      return nhwc0 ? max_pool2d_nhwc(*ops[0], std::get<PoolAttrs>(node.attrs))
                   : max_pool2d(*ops[0], std::get<PoolAttrs>(node.attrs));
    case OpKind::kAveragePool: return average_pool2d(*ops[0], std::get<PoolAttrs>(node.attrs));
    case OpKind::kGlobalAveragePool: return nhwc0 ? global_average_pool_nhwc(*ops[0]) : global_average_pool(*ops[0]);
    case OpKind::kGemm: return gemm(*ops[0], *ops[1], opt(2), node_attrs<GemmAttrs>(node));
    case OpKind::kMatMul: return matmul(*ops[0], *ops[1]);
    case OpKind::kAdd: return add(*ops[0], *ops[1], activation);
    case OpKind::kMul: return mul(*ops[0], *ops[1]);
    case OpKind::kConcat:
      return layouts.out_nhwc ? concat_channels_nhwc(ops)
                              : concat(ops, node_axis(node), node_attrs<AxisAttrs>(node).broadcast_batch);
    case OpKind::kFlatten: return flatten(take0(), node_axis(node));
    case OpKind::kReshape: {
      ReshapeAttrs attrs = std::get<ReshapeAttrs>(node.attrs);
      if (full_shapes != nullptr && ops[0]->rank() > 0) {
        attrs.shape = full_shapes->at(node.outputs[0]);
        attrs.shape[0] = ops[0]->dim(0);
        attrs.allow_zero = true;  // every dim is explicit
      }
      return reshape(take0(), attrs);
    }
    case OpKind::kBatchNorm:
      return batch_norm(*ops[0], *ops[1], *ops[2], *ops[3], *ops[4], node_attrs<BatchNormAttrs>(node));
    case OpKind::kLrn: return lrn(*ops[0], node_attrs<LrnAttrs>(node));
    case OpKind::kSoftmax: return softmax(*ops[0], node_axis(node));
    case OpKind::kSub: return sub(*ops[0], *ops[1]);
    case OpKind::kDiv: return div(*ops[0], *ops[1]);
    case OpKind::kPow: return pow(*ops[0], *ops[1]);
    case OpKind::kSigmoid: return sigmoid(take0());
    case OpKind::kHardSigmoid: return hard_sigmoid(take0(), node_attrs<HardSigmoidAttrs>(node));
    case OpKind::kHardSwish: return hard_swish(take0());
    case OpKind::kSqrt: return square_root(take0());
    case OpKind::kErf: return erf(take0());
    case OpKind::kGelu: return gelu(take0());
    case OpKind::kTranspose: return transpose(*ops[0], std::get<TransposeAttrs>(node.attrs).perm);
    case OpKind::kSlice: return slice(*ops[0], std::get<SliceAttrs>(node.attrs));
    case OpKind::kGather: return gather(*ops[0], std::get<GatherAttrs>(node.attrs));
    case OpKind::kPad: return pad(*ops[0], std::get<PadAttrs>(node.attrs));
    case OpKind::kReduceMean: return reduce_mean(*ops[0], node_attrs<ReduceAttrs>(node));
    case OpKind::kLayerNorm: return layer_norm(*ops[0], *ops[1], opt(2), node_attrs<LayerNormAttrs>(node));
  }
  return Status::unimplemented("no reference kernel");
}

// Runs every node on `inputs` and returns the graph outputs; each node's wall time into `seconds`
// when given (sized to the graph's nodes).
Result<TensorMap> run_nodes(const Graph& graph, const RunPlan& plan, const std::map<std::string, const Tensor*>& inputs,
                            const std::map<std::string, Shape>* full_shapes, NodeSeconds* seconds = nullptr) {
  Activations acts(graph, inputs);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (plan.skipped.count(i) != 0) continue;  // ran inside the node before it, which wrote its output
    const Node& node = graph.nodes[i];
    bool nhwc = false;
    // Read only when timing: serving's host segments run through here.
    const auto start = seconds != nullptr ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    auto out = run_node(node, i, acts, plan, full_shapes, nhwc);
    if (seconds != nullptr) {
      (*seconds)[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    if (!out) return Status(out.status().code(), node_label(node, i) + ": " + out.status().message());
    const auto fused = plan.fused.find(i);
    const std::string& out_name =
        fused == plan.fused.end() ? node.outputs[0] : graph.nodes[fused->second.node].outputs[0];
    acts.put(out_name, std::move(out).value(), nhwc);
    for (const std::string& name : node.inputs) {
      if (!name.empty() && plan.last_use.at(name) == i && plan.graph_outputs.count(name) == 0) {
        acts.release(name);
      }
    }
    if (plan.last_use.count(out_name) == 0 && plan.graph_outputs.count(out_name) == 0) {
      acts.release(out_name);
    }
  }
  TensorMap outputs;
  for (const ValueInfo& out : graph.outputs) {
    if (outputs.count(out.name) != 0) continue;
    const bool nhwc = acts.nhwc(out.name);
    Tensor t = acts.take(out.name, true);
    outputs[out.name] = nhwc ? nhwc_to_nchw(t) : std::move(t);
  }
  return outputs;
}

// Checks the caller's tensors against the graph inputs; returns their shapes.
Result<std::map<std::string, Shape>> check_inputs(const Graph& graph, const std::map<std::string, Tensor>& inputs) {
  std::map<std::string, Shape> shapes;
  for (const ValueInfo& in : graph.inputs) {
    auto it = inputs.find(in.name);
    if (it == inputs.end()) {
      std::string reader;
      for (size_t i = 0; i < graph.nodes.size() && reader.empty(); ++i) {
        const auto& names = graph.nodes[i].inputs;
        if (std::find(names.begin(), names.end(), in.name) != names.end()) {
          reader = " (read by " + node_label(graph.nodes[i], i) + ")";
        }
      }
      return Status::invalid_argument("graph input '" + in.name + "'" + reader + " was not given");
    }
    const Tensor& t = it->second;
    bool fits = t.shape.size() == in.shape.size();
    for (size_t d = 1; fits && d < t.shape.size(); ++d) fits = in.shape[d] < 0 || in.shape[d] == t.shape[d];
    if (!fits) {
      return Status::invalid_argument("input '" + in.name + "' has shape " + shape_to_string(t.shape) +
                                      ", the graph expects " + shape_to_string(in.shape));
    }
    if (t.elements() != shape_elements(t.shape)) {
      return Status::invalid_argument("input '" + in.name + "' has " + std::to_string(t.elements()) +
                                      " values for shape " + shape_to_string(t.shape));
    }
    shapes[in.name] = t.shape;
  }
  for (const auto& [name, tensor] : inputs) {
    if (shapes.count(name) == 0) return Status::invalid_argument("'" + name + "' is not a graph input");
  }
  return shapes;
}

Result<TensorMap> run_split(const Graph& graph, const RunPlan& plan, const std::map<std::string, Tensor>& inputs,
                            const std::map<std::string, Shape>& shapes, int64_t batch) {
  const int64_t first = batch / 2;
  std::map<std::string, Tensor> halves[2];
  std::map<std::string, const Tensor*> views[2];
  for (const auto& [name, tensor] : inputs) {
    halves[0][name] = slice_batch(tensor, 0, first);
    halves[1][name] = slice_batch(tensor, first, batch);
    views[0][name] = &halves[0][name];
    views[1][name] = &halves[1][name];
  }
  Result<TensorMap> second = Status::internal("the second half did not run");
  std::thread worker([&] {
    try {
      second = run_nodes(graph, plan, views[1], &shapes);
    } catch (const std::bad_alloc&) {
      second = Status::resource_exhausted("out of memory running the reference graph");
    } catch (const std::exception& e) {
      second = Status::internal(std::string("reference executor: ") + e.what());
    }
  });
  Result<TensorMap> head = Status::internal("the first half did not run");
  try {
    head = run_nodes(graph, plan, views[0], &shapes);
  } catch (...) {
    worker.join();
    throw;
  }
  worker.join();
  if (!head) return head.status();
  if (!second) return second.status();
  TensorMap outputs;
  for (const ValueInfo& out : graph.outputs) {
    outputs[out.name] = join_batch(head->at(out.name), second->at(out.name));
  }
  return outputs;
}

}  // namespace

Result<std::map<std::string, Tensor>> run_reference(const Graph& graph, const std::map<std::string, Tensor>& inputs,
                                                    ModelCache* cache, NodeSeconds* node_seconds) {
  try {
    TESSERA_RETURN_IF_ERROR(validate_graph(graph));
    TESSERA_ASSIGN_OR_RETURN(const auto input_shapes, check_inputs(graph, inputs));
    TESSERA_ASSIGN_OR_RETURN(const auto shapes, infer_shapes_from(graph, input_shapes));
    const RunPlan plan = make_plan(graph, cache);
    const int64_t batch = common_batch(graph, shapes);
    if (node_seconds != nullptr) node_seconds->assign(graph.nodes.size(), 0.0);
    if (node_seconds == nullptr && batch > 1 && batch_separable(graph, shapes, batch)) {
      // The second half's thread comes out of the host's budget: a batch running beside others
      // that hold every core runs whole on its caller's thread.
      const HostThreads threads(2);
      if (threads.count() == 2) return run_split(graph, plan, inputs, shapes, batch);
    }
    std::map<std::string, const Tensor*> views;
    for (const auto& [name, tensor] : inputs) views[name] = &tensor;
    return run_nodes(graph, plan, views, nullptr, node_seconds);
  } catch (const std::bad_alloc&) {
    return Status::resource_exhausted("out of memory running the reference graph");
  } catch (const std::exception& e) {
    return Status::internal(std::string("reference executor: ") + e.what());
  }
}

}  // namespace tessera::host
