#include "accel/import/onnx/onnx_node.h"

#include <algorithm>
#include <functional>
#include <limits>

#include "accel/import/onnx/onnx_converters.h"
#include "accel/import/onnx/onnx_importer.h"
#include "accel/import/onnx/onnx_tensor.h"

namespace tessera::onnx_import {

Status expect_inputs(const NodeProto& node, const Attributes& attrs, int min, int max) {
  const int n = node.input_size();
  if (n < min || n > max) {
    return attrs.error("has " + std::to_string(n) + " inputs, expected " +
                       (min == max ? std::to_string(min) : std::to_string(min) + " to " + std::to_string(max)));
  }
  if (node.input(0).empty()) return attrs.error("its first input is missing");
  return Status::ok();
}

Status expect_single_output(const NodeProto& node, const Attributes& attrs) {
  if (node.output_size() < 1 || node.output(0).empty()) return attrs.error("has no output");
  for (int i = 1; i < node.output_size(); ++i) {
    if (!node.output(i).empty()) {
      return attrs.unsupported("output " + std::to_string(i) + " ('" + node.output(i) +
                               "') is not supported; only inference-mode outputs are");
    }
  }
  return Status::ok();
}

Result<std::vector<int64_t>> constant_ints(const NodeProto& node, int index, const ImportContext& ctx,
                                           const Attributes& attrs, const std::string& what) {
  if (node.input_size() <= index || node.input(index).empty()) return attrs.error(what + " is missing");
  auto it = ctx.constants.find(node.input(index));
  if (it == ctx.constants.end()) {
    return attrs.unsupported(what + " ('" + node.input(index) + "') must be known at load (a constant)");
  }
  return to_int64_values(*it->second, describe_node(node) + " " + what);
}

namespace {

using tessera::onnx::NodeProto;

// A 2-element spatial attribute (kernel_shape, strides, dilations) with its default.
Result<std::array<int, 2>> spatial_pair(const Attributes& attrs, const std::string& name, int fallback) {
  TESSERA_ASSIGN_OR_RETURN(auto values, attrs.integers(name));
  if (values.empty()) return std::array<int, 2>{fallback, fallback};
  if (values.size() != 2) {
    return attrs.unsupported("attribute '" + name + "' has " + std::to_string(values.size()) +
                             " entries; only 2-D (NCHW) operators are supported");
  }
  for (int64_t v : values) {
    if (v < 1 || v > 4096) return attrs.error("attribute '" + name + "' has the invalid value " + std::to_string(v));
  }
  return std::array<int, 2>{static_cast<int>(values[0]), static_cast<int>(values[1])};
}

// ONNX pads [top, left, bottom, right] (x1_begin, x2_begin, x1_end, x2_end); auto_pad VALID or
// NOTSET only.
Result<std::array<int, 4>> spatial_pads(const Attributes& attrs) {
  TESSERA_ASSIGN_OR_RETURN(std::string auto_pad, attrs.text("auto_pad", "NOTSET"));
  if (auto_pad != "NOTSET" && auto_pad != "VALID") {
    return attrs.unsupported("auto_pad=" + auto_pad + " is not supported; export with explicit pads");
  }
  TESSERA_ASSIGN_OR_RETURN(auto values, attrs.integers("pads"));
  if (values.empty() || auto_pad == "VALID") return std::array<int, 4>{0, 0, 0, 0};
  if (values.size() != 4) {
    return attrs.unsupported("attribute 'pads' has " + std::to_string(values.size()) +
                             " entries; only 2-D (NCHW) operators are supported");
  }
  std::array<int, 4> pads{};
  for (size_t i = 0; i < 4; ++i) {
    if (values[i] < 0 || values[i] > 4096)
      return attrs.error("attribute 'pads' has the invalid value " + std::to_string(values[i]));
    pads[i] = static_cast<int>(values[i]);
  }
  return pads;
}

// Reads an optional scalar float operand that must be a constant (Clip's min/max since opset 11).
Result<float> constant_scalar(const NodeProto& node, int index, float fallback, const ImportContext& ctx,
                              const Attributes& attrs) {
  if (node.input_size() <= index || node.input(index).empty()) return fallback;
  auto it = ctx.constants.find(node.input(index));
  if (it == ctx.constants.end()) {
    return attrs.unsupported("operand '" + node.input(index) + "' must be a constant");
  }
  TESSERA_ASSIGN_OR_RETURN(Tensor t, to_float_tensor(*it->second, describe_node(node)));
  if (t.elements() != 1) return attrs.error("operand '" + node.input(index) + "' must be a scalar");
  return t.data[0];
}

Status convert_conv(const NodeProto& node, const Attributes& attrs, const ImportContext& ctx, Node& out) {
  TESSERA_RETURN_IF_ERROR(expect_inputs(node, attrs, 2, 3));
  ConvAttrs conv;
  if (attrs.has("kernel_shape")) {
    TESSERA_ASSIGN_OR_RETURN(conv.kernel, spatial_pair(attrs, "kernel_shape", 1));
  } else {
    auto w = ctx.constants.find(node.input(1));
    if (w == ctx.constants.end() || w->second->dims_size() != 4) {
      return attrs.unsupported("needs kernel_shape or a constant 4-D weight");
    }
    conv.kernel = {static_cast<int>(w->second->dims(2)), static_cast<int>(w->second->dims(3))};
  }
  TESSERA_ASSIGN_OR_RETURN(conv.stride, spatial_pair(attrs, "strides", 1));
  TESSERA_ASSIGN_OR_RETURN(conv.dilation, spatial_pair(attrs, "dilations", 1));
  TESSERA_ASSIGN_OR_RETURN(conv.pads, spatial_pads(attrs));
  TESSERA_ASSIGN_OR_RETURN(int64_t group, attrs.integer("group", 1));
  if (group < 1) return attrs.error("group must be >= 1");
  conv.group = static_cast<int>(group);
  out.op = OpKind::kConv;
  out.attrs = conv;
  return Status::ok();
}

Status convert_pool(const NodeProto& node, const Attributes& attrs, const ImportContext&, Node& out, bool max) {
  TESSERA_RETURN_IF_ERROR(expect_inputs(node, attrs, 1, 1));
  if (!attrs.has("kernel_shape")) return attrs.error("attribute 'kernel_shape' is required");
  PoolAttrs pool;
  TESSERA_ASSIGN_OR_RETURN(pool.kernel, spatial_pair(attrs, "kernel_shape", 1));
  TESSERA_ASSIGN_OR_RETURN(pool.stride, spatial_pair(attrs, "strides", 1));
  TESSERA_ASSIGN_OR_RETURN(pool.pads, spatial_pads(attrs));
  TESSERA_ASSIGN_OR_RETURN(int64_t ceil_mode, attrs.integer("ceil_mode", 0));
  pool.ceil_mode = ceil_mode != 0;
  if (max) {
    TESSERA_ASSIGN_OR_RETURN(auto dilation, spatial_pair(attrs, "dilations", 1));
    if (dilation != std::array<int, 2>{1, 1}) return attrs.unsupported("dilated max pooling is not supported");
    TESSERA_ASSIGN_OR_RETURN(int64_t storage_order, attrs.integer("storage_order", 0));
    if (storage_order != 0) return attrs.unsupported("storage_order=1 is not supported");
  } else {
    TESSERA_ASSIGN_OR_RETURN(int64_t include_pad, attrs.integer("count_include_pad", 0));
    pool.count_include_pad = include_pad != 0;
  }
  out.op = max ? OpKind::kMaxPool : OpKind::kAveragePool;
  out.attrs = pool;
  return Status::ok();
}

Status convert_gemm(const NodeProto& node, const Attributes& attrs, const ImportContext&, Node& out) {
  TESSERA_RETURN_IF_ERROR(expect_inputs(node, attrs, 2, 3));
  GemmAttrs gemm;
  TESSERA_ASSIGN_OR_RETURN(gemm.alpha, attrs.real("alpha", 1.0f));
  TESSERA_ASSIGN_OR_RETURN(gemm.beta, attrs.real("beta", 1.0f));
  TESSERA_ASSIGN_OR_RETURN(int64_t trans_a, attrs.integer("transA", 0));
  TESSERA_ASSIGN_OR_RETURN(int64_t trans_b, attrs.integer("transB", 0));
  gemm.trans_a = trans_a != 0;
  gemm.trans_b = trans_b != 0;
  out.op = OpKind::kGemm;
  out.attrs = gemm;
  return Status::ok();
}

Status convert_clip(const NodeProto& node, const Attributes& attrs, const ImportContext& ctx, Node& out) {
  TESSERA_RETURN_IF_ERROR(expect_inputs(node, attrs, 1, 3));
  ClipAttrs clip;
  TESSERA_ASSIGN_OR_RETURN(clip.min, constant_scalar(node, 1, -std::numeric_limits<float>::max(), ctx, attrs));
  TESSERA_ASSIGN_OR_RETURN(clip.max, constant_scalar(node, 2, std::numeric_limits<float>::max(), ctx, attrs));
  if (clip.min > clip.max) return attrs.error("min is greater than max");
  out.op = OpKind::kClip;
  out.attrs = clip;
  out.inputs.resize(1);  // the bounds are attributes now
  return Status::ok();
}

Status convert_reshape(const NodeProto& node, const Attributes& attrs, const ImportContext& ctx, Node& out) {
  TESSERA_RETURN_IF_ERROR(expect_inputs(node, attrs, 2, 2));
  auto it = ctx.constants.find(node.input(1));
  if (it == ctx.constants.end()) {
    return attrs.unsupported("the target shape '" + node.input(1) +
                             "' must be a constant (export with constant folding)");
  }
  ReshapeAttrs reshape;
  TESSERA_ASSIGN_OR_RETURN(reshape.shape, to_int64_values(*it->second, describe_node(node)));
  TESSERA_ASSIGN_OR_RETURN(int64_t allow_zero, attrs.integer("allowzero", 0));
  reshape.allow_zero = allow_zero != 0;
  if (!reshape.allow_zero) keep_batch_dim(node, ctx, reshape.shape);
  out.op = OpKind::kReshape;
  out.attrs = reshape;
  out.inputs.resize(1);
  return Status::ok();
}

Status convert_batch_norm(const NodeProto& node, const Attributes& attrs, const ImportContext&, Node& out) {
  TESSERA_RETURN_IF_ERROR(expect_inputs(node, attrs, 5, 5));
  TESSERA_ASSIGN_OR_RETURN(int64_t training, attrs.integer("training_mode", 0));
  if (training != 0) return attrs.unsupported("training_mode=1 is not supported");
  BatchNormAttrs bn;
  TESSERA_ASSIGN_OR_RETURN(bn.epsilon, attrs.real("epsilon", 1e-5f));
  out.op = OpKind::kBatchNorm;
  out.attrs = bn;
  return Status::ok();
}

Status convert_lrn(const NodeProto& node, const Attributes& attrs, const ImportContext&, Node& out) {
  TESSERA_RETURN_IF_ERROR(expect_inputs(node, attrs, 1, 1));
  if (!attrs.has("size")) return attrs.error("attribute 'size' is required");
  LrnAttrs lrn;
  TESSERA_ASSIGN_OR_RETURN(int64_t size, attrs.integer("size", 5));
  if (size < 1) return attrs.error("size must be >= 1");
  lrn.size = static_cast<int>(size);
  TESSERA_ASSIGN_OR_RETURN(lrn.alpha, attrs.real("alpha", 1e-4f));
  TESSERA_ASSIGN_OR_RETURN(lrn.beta, attrs.real("beta", 0.75f));
  TESSERA_ASSIGN_OR_RETURN(lrn.bias, attrs.real("bias", 1.0f));
  out.op = OpKind::kLrn;
  out.attrs = lrn;
  return Status::ok();
}

// Concat, Softmax, Flatten: one `axis` attribute.
Converter axis_op(OpKind op, int min_inputs, int max_inputs, bool required, int64_t fallback) {
  return [=](const NodeProto& node, const Attributes& attrs, const ImportContext&, Node& out) -> Status {
    TESSERA_RETURN_IF_ERROR(expect_inputs(node, attrs, min_inputs, max_inputs));
    if (required && !attrs.has("axis")) return attrs.error("attribute 'axis' is required");
    TESSERA_ASSIGN_OR_RETURN(int64_t axis, attrs.integer("axis", fallback));
    out.op = op;
    out.attrs = AxisAttrs{static_cast<int>(axis)};
    return Status::ok();
  };
}

// Operators with no attributes Tessera needs.
Converter plain_op(OpKind op, int min_inputs, int max_inputs) {
  return [=](const NodeProto& node, const Attributes& attrs, const ImportContext&, Node& out) -> Status {
    TESSERA_RETURN_IF_ERROR(expect_inputs(node, attrs, min_inputs, max_inputs));
    out.op = op;
    return Status::ok();
  };
}

Status convert_dropout(const NodeProto& node, const Attributes& attrs, const ImportContext&, Node& out) {
  TESSERA_RETURN_IF_ERROR(expect_inputs(node, attrs, 1, 3));
  out.op = OpKind::kIdentity;  // inference: dropout passes its input through
  out.inputs.resize(1);
  return Status::ok();
}

const std::map<std::string, Converter>& converters(int64_t opset) {
  using namespace std::placeholders;
  static const std::map<std::string, Converter> common = {
      {"Conv", convert_conv},
      {"Relu", plain_op(OpKind::kRelu, 1, 1)},
      {"Clip", convert_clip},
      {"MaxPool", std::bind(convert_pool, _1, _2, _3, _4, true)},
      {"AveragePool", std::bind(convert_pool, _1, _2, _3, _4, false)},
      {"GlobalAveragePool", plain_op(OpKind::kGlobalAveragePool, 1, 1)},
      {"Gemm", convert_gemm},
      {"MatMul", plain_op(OpKind::kMatMul, 2, 2)},
      {"Add", plain_op(OpKind::kAdd, 2, 2)},
      {"Mul", plain_op(OpKind::kMul, 2, 2)},
      {"Concat", axis_op(OpKind::kConcat, 1, 1 << 16, true, 0)},
      {"Flatten", axis_op(OpKind::kFlatten, 1, 1, false, 1)},
      {"Reshape", convert_reshape},
      {"BatchNormalization", convert_batch_norm},
      {"LRN", convert_lrn},
      {"Dropout", convert_dropout},
      {"Identity", plain_op(OpKind::kIdentity, 1, 1)},
  };
  // Softmax's default axis changed in opset 13 (from 1 with 2-D coercion, to -1); the layout
  // converters read axes from attributes or operands by opset. One table per opset, built once.
  static const std::map<int64_t, std::map<std::string, Converter>> by_opset = [] {
    std::map<int64_t, std::map<std::string, Converter>> tables;
    for (int64_t v = kMinOnnxOpset; v <= kMaxOnnxOpset; ++v) {
      auto m = common;
      m["Softmax"] = axis_op(OpKind::kSoftmax, 1, 1, false, v < 13 ? 1 : -1);
      add_layout_converters(v, m);
      tables[v] = std::move(m);
    }
    return tables;
  }();
  return by_opset.at(std::clamp(opset, kMinOnnxOpset, kMaxOnnxOpset));
}

// The nearest thing Tessera runs for an operator it does not: a rewrite that exports without it.
std::string rewrite_hint(const std::string& op) {
  static const std::map<std::string, std::string> hints = {
      {"Gelu", "export at opset 17 or lower, where torch writes GELU as the Erf chain Tessera fuses into one op"},
      {"Tanh", "nn.GELU(approximate='none') if it is a tanh-GELU; otherwise Sigmoid (tanh(x) = 2 sigmoid(2x) - 1)"},
      {"Resize", "none: Tessera runs classification networks, without upsampling"},
      {"Upsample", "none: Tessera runs classification networks, without upsampling"},
      {"ReduceSum", "ReduceMean (the sum divided by the count), e.g. torch.mean instead of torch.sum"},
      {"ReduceMax", "GlobalMaxPool is not supported either; use average pooling (ReduceMean, GlobalAveragePool)"},
      {"InstanceNormalization", "BatchNormalization in eval mode, or LayerNormalization"},
      {"GroupNormalization", "BatchNormalization in eval mode, or LayerNormalization"},
      {"Einsum", "MatMul with Transpose/Reshape (torch.matmul instead of torch.einsum)"},
      {"ConvTranspose", "Conv (classification backbones do not need transposed convolutions)"},
      {"LeakyRelu", "Relu, or Clip"},
      {"PRelu", "Relu, or Clip"},
      {"Elu", "Relu"},
      {"Selu", "Relu"},
      {"Softplus", "Relu"},
      {"Mish", "HardSwish or x * Sigmoid(x) (SiLU)"},
      {"GlobalMaxPool", "GlobalAveragePool, or MaxPool with the map's size as kernel"},
      {"Expand", "export with a static input shape so the exporter's Expand folds at load"},
      {"NonZero", "export with a static input shape so the shape arithmetic folds at load"},
  };
  auto it = hints.find(op);
  if (it != hints.end()) return it->second;
  return "export with a static input shape and constant folding on (shape arithmetic then folds at load), "
         "or replace it with one of the supported operators";
}

}  // namespace

std::string describe_node(const NodeProto& node) {
  std::string name = node.name();
  if (name.empty() && node.output_size() > 0) name = node.output(0);
  return "node '" + name + "' (" + node.op_type() + ")";
}

Status convert_node(const NodeProto& node, const ImportContext& context, Graph& graph) {
  if (!node.domain().empty() && node.domain() != "ai.onnx") {
    return Status::unimplemented(describe_node(node) + ": operators of domain '" + node.domain() +
                                 "' are not supported");
  }
  Attributes attrs(node);
  if (node.op_type() == "Split") return convert_split(node, attrs, context, graph);
  const auto& table = converters(context.opset);
  auto it = table.find(node.op_type());
  if (it == table.end()) {
    return Status::unimplemented(
        describe_node(node) + ": operator " + node.op_type() +
        " is not supported by Tessera; nearest supported rewrite: " + rewrite_hint(node.op_type()));
  }
  // Dropout's mask output is dropped (inference: no reader may use it; one that does is refused
  // by validation, naming it).
  if (node.op_type() != "Dropout") TESSERA_RETURN_IF_ERROR(expect_single_output(node, attrs));
  Node out;
  out.name = node.name().empty() ? node.output(0) : node.name();
  out.inputs.assign(node.input().begin(), node.input().end());
  out.outputs = {node.output(0)};
  TESSERA_RETURN_IF_ERROR(it->second(node, attrs, context, out));
  if (out.op == OpKind::kConcat && context.batch_of_one) {
    // A batch-of-one export's constants concatenated with activations (ViT's class token) repeat
    // along the batch, so the model runs at any batch.
    auto& concat = std::get<AxisAttrs>(out.attrs);
    for (const std::string& in : out.inputs) {
      auto c = context.constants.find(in);
      if (c != context.constants.end() && c->second->dims_size() > 1 && c->second->dims(0) == 1) {
        const int rank = c->second->dims_size();
        concat.broadcast_batch = concat.axis != 0 && concat.axis != -rank;
      }
    }
  }
  graph.nodes.push_back(std::move(out));
  return Status::ok();
}

}  // namespace tessera::onnx_import
