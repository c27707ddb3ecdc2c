// Converters of the elementwise functions (Sigmoid, HardSigmoid, HardSwish, Sub, Div, Pow, Sqrt,
// Erf), layout and selection (Transpose, Slice, Split, Gather, Pad, Squeeze, Unsqueeze, Cast),
// ReduceMean and LayerNormalization. Their attribute-like operands (Slice's bounds, Pad's pads,
// Gather's indices, axes) must be known at load: initializers, Constant nodes, or values the
// importer folded (onnx_fold.h).
#include <algorithm>

#include "accel/graph/op_shapes.h"
#include "accel/import/onnx/onnx_converters.h"
#include "accel/import/onnx/onnx_tensor.h"

namespace tessera::onnx_import {
namespace {

Status plain(const NodeProto& node, const Attributes& attrs, Node& out, OpKind op, int min, int max) {
  TESSERA_RETURN_IF_ERROR(expect_inputs(node, attrs, min, max));
  out.op = op;
  return Status::ok();
}

Converter plain_converter(OpKind op, int min, int max) {
  return [=](const NodeProto& node, const Attributes& attrs, const ImportContext&, Node& out) {
    return plain(node, attrs, out, op, min, max);
  };
}

// The shape of an activation operand, when the importer inferred it.
const Shape* shape_of(const NodeProto& node, int index, const ImportContext& ctx) {
  if (node.input_size() <= index) return nullptr;
  auto it = ctx.shapes.find(node.input(index));
  return it == ctx.shapes.end() ? nullptr : &it->second;
}

Result<const Shape*> known_shape(const NodeProto& node, const ImportContext& ctx, const Attributes& attrs) {
  const Shape* s = shape_of(node, 0, ctx);
  if (s == nullptr) return attrs.error("the shape of its input '" + node.input(0) + "' is not known");
  return s;
}

Status convert_hard_sigmoid(const NodeProto& node, const Attributes& attrs, const ImportContext&, Node& out) {
  TESSERA_RETURN_IF_ERROR(plain(node, attrs, out, OpKind::kHardSigmoid, 1, 1));
  HardSigmoidAttrs h;
  TESSERA_ASSIGN_OR_RETURN(h.alpha, attrs.real("alpha", 0.2f));
  TESSERA_ASSIGN_OR_RETURN(h.beta, attrs.real("beta", 0.5f));
  out.attrs = h;
  return Status::ok();
}

Status convert_transpose(const NodeProto& node, const Attributes& attrs, const ImportContext& ctx, Node& out) {
  TESSERA_RETURN_IF_ERROR(plain(node, attrs, out, OpKind::kTranspose, 1, 1));
  TESSERA_ASSIGN_OR_RETURN(auto perm, attrs.integers("perm"));
  TransposeAttrs t;
  if (perm.empty()) {
    TESSERA_ASSIGN_OR_RETURN(const Shape* x, known_shape(node, ctx, attrs));
    for (size_t d = x->size(); d-- > 0;) t.perm.push_back(static_cast<int>(d));
  }
  for (int64_t p : perm) t.perm.push_back(static_cast<int>(p));
  out.attrs = t;
  return Status::ok();
}

Status convert_slice(const NodeProto& node, const Attributes& attrs, const ImportContext& ctx, Node& out) {
  TESSERA_RETURN_IF_ERROR(plain(node, attrs, out, OpKind::kSlice, 3, 5));
  SliceAttrs s;
  TESSERA_ASSIGN_OR_RETURN(s.starts, constant_ints(node, 1, ctx, attrs, "starts"));
  TESSERA_ASSIGN_OR_RETURN(s.ends, constant_ints(node, 2, ctx, attrs, "ends"));
  if (node.input_size() > 3 && !node.input(3).empty()) {
    TESSERA_ASSIGN_OR_RETURN(s.axes, constant_ints(node, 3, ctx, attrs, "axes"));
  }
  if (node.input_size() > 4 && !node.input(4).empty()) {
    TESSERA_ASSIGN_OR_RETURN(s.steps, constant_ints(node, 4, ctx, attrs, "steps"));
  }
  out.attrs = s;
  out.inputs.resize(1);
  return Status::ok();
}

Status convert_gather(const NodeProto& node, const Attributes& attrs, const ImportContext& ctx, Node& out) {
  TESSERA_RETURN_IF_ERROR(plain(node, attrs, out, OpKind::kGather, 2, 2));
  GatherAttrs g;
  TESSERA_ASSIGN_OR_RETURN(int64_t axis, attrs.integer("axis", 0));
  g.axis = static_cast<int>(axis);
  TESSERA_ASSIGN_OR_RETURN(g.indices, constant_ints(node, 1, ctx, attrs, "indices"));
  const auto* indices = ctx.constants.at(node.input(1));
  g.indices_shape.assign(indices->dims().begin(), indices->dims().end());
  out.attrs = g;
  out.inputs.resize(1);
  return Status::ok();
}

Status convert_pad(const NodeProto& node, const Attributes& attrs, const ImportContext& ctx, Node& out) {
  TESSERA_RETURN_IF_ERROR(plain(node, attrs, out, OpKind::kPad, 1, 4));
  TESSERA_ASSIGN_OR_RETURN(std::string mode, attrs.text("mode", "constant"));
  if (mode != "constant") {
    return attrs.unsupported("mode '" + mode + "' is not supported; only constant padding is (zero padding in Conv)");
  }
  PadAttrs p;
  TESSERA_ASSIGN_OR_RETURN(p.pads, constant_ints(node, 1, ctx, attrs, "pads"));
  if (node.input_size() > 2 && !node.input(2).empty()) {
    auto it = ctx.constants.find(node.input(2));
    if (it == ctx.constants.end()) return attrs.unsupported("constant_value must be known at load");
    TESSERA_ASSIGN_OR_RETURN(Tensor v, to_float_tensor(*it->second, describe_node(node)));
    if (v.elements() != 1) return attrs.error("constant_value must be a scalar");
    p.value = v.data[0];
  }
  if (node.input_size() > 3 && !node.input(3).empty()) {
    // Pads for the listed axes only (opset 18): spread them over every dim.
    TESSERA_ASSIGN_OR_RETURN(const Shape* x, known_shape(node, ctx, attrs));
    TESSERA_ASSIGN_OR_RETURN(auto axes, constant_ints(node, 3, ctx, attrs, "axes"));
    const auto rank = static_cast<int64_t>(x->size());
    if (p.pads.size() != 2 * axes.size()) return attrs.error("pads must hold two values per listed axis");
    std::vector<int64_t> full(2 * x->size(), 0);
    for (size_t i = 0; i < axes.size(); ++i) {
      const int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
      if (a < 0 || a >= rank) return attrs.error("axis " + std::to_string(axes[i]) + " is out of range");
      full[static_cast<size_t>(a)] = p.pads[i];
      full[static_cast<size_t>(a + rank)] = p.pads[i + axes.size()];
    }
    p.pads = full;
  }
  out.attrs = p;
  out.inputs.resize(1);
  return Status::ok();
}

// ReduceMean: axes as an attribute up to opset 17, as operand 1 from 18.
Converter reduce_mean_converter(int64_t opset) {
  return [opset](const NodeProto& node, const Attributes& attrs, const ImportContext& ctx, Node& out) -> Status {
    TESSERA_RETURN_IF_ERROR(plain(node, attrs, out, OpKind::kReduceMean, 1, opset >= 18 ? 2 : 1));
    ReduceAttrs r;
    TESSERA_ASSIGN_OR_RETURN(int64_t keep, attrs.integer("keepdims", 1));
    r.keep_dims = keep != 0;
    std::vector<int64_t> axes;
    if (opset >= 18) {
      if (node.input_size() > 1 && !node.input(1).empty()) {
        TESSERA_ASSIGN_OR_RETURN(axes, constant_ints(node, 1, ctx, attrs, "axes"));
      }
      TESSERA_ASSIGN_OR_RETURN(int64_t noop, attrs.integer("noop_with_empty_axes", 0));
      if (axes.empty() && noop != 0) {
        out.op = OpKind::kIdentity;
        out.inputs.resize(1);
        return Status::ok();
      }
    } else {
      TESSERA_ASSIGN_OR_RETURN(axes, attrs.integers("axes"));
    }
    for (int64_t a : axes) r.axes.push_back(static_cast<int>(a));
    out.attrs = r;
    out.inputs.resize(1);
    return Status::ok();
  };
}

Status convert_layer_norm(const NodeProto& node, const Attributes& attrs, const ImportContext&, Node& out) {
  TESSERA_RETURN_IF_ERROR(plain(node, attrs, out, OpKind::kLayerNorm, 2, 3));
  LayerNormAttrs ln;
  TESSERA_ASSIGN_OR_RETURN(int64_t axis, attrs.integer("axis", -1));
  ln.axis = static_cast<int>(axis);
  TESSERA_ASSIGN_OR_RETURN(ln.epsilon, attrs.real("epsilon", 1e-5f));
  out.attrs = ln;
  return Status::ok();
}

// Squeeze / Unsqueeze of an activation: a Reshape to the shape they give.
Converter squeeze_converter(int64_t opset, bool unsqueeze) {
  return [=](const NodeProto& node, const Attributes& attrs, const ImportContext& ctx, Node& out) -> Status {
    TESSERA_RETURN_IF_ERROR(expect_inputs(node, attrs, 1, 2));
    TESSERA_ASSIGN_OR_RETURN(const Shape* x, known_shape(node, ctx, attrs));
    std::vector<int64_t> axes;
    if (opset >= 13) {
      if (node.input_size() > 1 && !node.input(1).empty()) {
        TESSERA_ASSIGN_OR_RETURN(axes, constant_ints(node, 1, ctx, attrs, "axes"));
      }
    } else {
      TESSERA_ASSIGN_OR_RETURN(axes, attrs.integers("axes"));
    }
    if (unsqueeze && axes.empty()) return attrs.error("axes are required");
    const auto rank = static_cast<int64_t>(x->size() + (unsqueeze ? axes.size() : 0));
    std::vector<bool> listed(static_cast<size_t>(rank), false);
    for (int64_t a : axes) {
      const int64_t n = a < 0 ? a + rank : a;
      if (n < 0 || n >= rank || listed[static_cast<size_t>(n)]) {
        return attrs.error("axis " + std::to_string(a) + " is out of range or repeated for rank " +
                           std::to_string(rank));
      }
      listed[static_cast<size_t>(n)] = true;
    }
    Shape target;
    size_t next = 0;
    for (int64_t d = 0; d < rank; ++d) {
      const bool hit = listed[static_cast<size_t>(d)];
      if (unsqueeze) {
        target.push_back(hit ? 1 : (*x)[next++]);
      } else if (axes.empty() ? (*x)[static_cast<size_t>(d)] != 1 : !hit) {
        target.push_back((*x)[static_cast<size_t>(d)]);
      } else if ((*x)[static_cast<size_t>(d)] != 1) {
        return attrs.error("squeezed axis " + std::to_string(d) + " of " + shape_to_string(*x) + " is not 1");
      }
    }
    if (!listed.empty() && !listed[0]) keep_batch_dim(node, ctx, target);
    out.op = OpKind::kReshape;
    out.attrs = ReshapeAttrs{target, false};
    out.inputs.resize(1);
    return Status::ok();
  };
}

// Cast of an activation: to float it is the identity (activations are float32); other types are
// not computed on.
Status convert_cast(const NodeProto& node, const Attributes& attrs, const ImportContext&, Node& out) {
  TESSERA_RETURN_IF_ERROR(plain(node, attrs, out, OpKind::kIdentity, 1, 1));
  TESSERA_ASSIGN_OR_RETURN(int64_t to, attrs.integer("to", 0));
  if (to != tessera::onnx::TensorProto::FLOAT) {
    return attrs.unsupported("a cast of an activation to element type " + std::to_string(to) +
                             " is not supported (activations are float32)");
  }
  return Status::ok();
}

}  // namespace

void keep_batch_dim(const NodeProto& node, const ImportContext& ctx, Shape& target) {
  const Shape* x = shape_of(node, 0, ctx);
  if (ctx.batch_of_one && x != nullptr && !x->empty() && (*x)[0] == 1 && !target.empty() && target[0] == 1) {
    target[0] = 0;
  }
}

Status convert_split(const NodeProto& node, const Attributes& attrs, const ImportContext& ctx, Graph& graph) {
  TESSERA_RETURN_IF_ERROR(expect_inputs(node, attrs, 1, 2));
  TESSERA_ASSIGN_OR_RETURN(const Shape* x, known_shape(node, ctx, attrs));
  TESSERA_ASSIGN_OR_RETURN(int64_t axis_in, attrs.integer("axis", 0));
  auto axis = normalize_axis(static_cast<int>(axis_in), static_cast<int>(x->size()));
  if (!axis) return attrs.error(axis.status().message());
  const int64_t dim = (*x)[static_cast<size_t>(*axis)];
  const int outputs = node.output_size();
  if (outputs < 1) return attrs.error("has no output");
  std::vector<int64_t> sizes;
  if (node.input_size() > 1 && !node.input(1).empty()) {
    TESSERA_ASSIGN_OR_RETURN(sizes, constant_ints(node, 1, ctx, attrs, "split"));
  } else {
    TESSERA_ASSIGN_OR_RETURN(sizes, attrs.integers("split"));
  }
  if (sizes.empty()) {
    const int64_t each = (dim + outputs - 1) / outputs;
    for (int i = 0; i < outputs; ++i) sizes.push_back(std::min(each, dim - each * i));
  }
  int64_t total = 0;
  for (int64_t v : sizes) {
    if (v < 0) return attrs.error("a negative split size");
    total += v;
  }
  if (static_cast<int>(sizes.size()) != outputs || total != dim) {
    return attrs.error(std::to_string(sizes.size()) + " sizes summing to " + std::to_string(total) + " for " +
                       std::to_string(outputs) + " outputs of dim " + std::to_string(dim));
  }
  int64_t start = 0;
  const std::string base = node.name().empty() ? node.output(0) : node.name();
  for (int i = 0; i < outputs; ++i) {
    const int64_t end = start + sizes[static_cast<size_t>(i)];
    if (!node.output(i).empty()) {
      Node out;
      out.name = base + "/" + std::to_string(i);
      out.op = OpKind::kSlice;
      out.inputs = {node.input(0)};
      out.outputs = {node.output(i)};
      out.attrs = SliceAttrs{{start}, {end}, {*axis}, {1}};
      graph.nodes.push_back(std::move(out));
    }
    start = end;
  }
  return Status::ok();
}

void add_layout_converters(int64_t opset, std::map<std::string, Converter>& table) {
  table["Sigmoid"] = plain_converter(OpKind::kSigmoid, 1, 1);
  table["HardSigmoid"] = convert_hard_sigmoid;
  table["HardSwish"] = plain_converter(OpKind::kHardSwish, 1, 1);
  table["Sub"] = plain_converter(OpKind::kSub, 2, 2);
  table["Div"] = plain_converter(OpKind::kDiv, 2, 2);
  table["Pow"] = plain_converter(OpKind::kPow, 2, 2);
  table["Sqrt"] = plain_converter(OpKind::kSqrt, 1, 1);
  table["Erf"] = plain_converter(OpKind::kErf, 1, 1);
  table["Transpose"] = convert_transpose;
  table["Slice"] = convert_slice;
  table["Gather"] = convert_gather;
  table["Pad"] = convert_pad;
  table["ReduceMean"] = reduce_mean_converter(opset);
  table["Squeeze"] = squeeze_converter(opset, false);
  table["Unsqueeze"] = squeeze_converter(opset, true);
  table["Cast"] = convert_cast;
  if (opset >= 17) table["LayerNormalization"] = convert_layer_norm;
}

}  // namespace tessera::onnx_import
