#include "accel/import/caffe/caffe_layers.h"

#include <algorithm>
#include <functional>

#include "accel/graph/op_shapes.h"

namespace tessera::caffe_import {

struct NetBuilder::Layer {
  const caffe::LayerParameter& p;
  std::string label;  // describe_layer(p)
  std::string name;   // the layer's name, or its first top when unnamed

  Status error(const std::string& what) const { return Status::invalid_argument(label + ": " + what); }
  Status unsupported(const std::string& what) const { return Status::unimplemented(label + ": " + what); }
};

namespace {

using Layer = NetBuilder::Layer;
using Converter = std::function<Status(NetBuilder&, const Layer&)>;
using Pair = std::array<int, 2>;

Status expect_counts(const Layer& l, int min_bottoms, int max_bottoms, int tops) {
  const int b = l.p.bottom_size();
  if (b < min_bottoms || b > max_bottoms) {
    return l.error(
        "has " + std::to_string(b) + " bottom(s), expected " +
        (min_bottoms == max_bottoms ? std::to_string(min_bottoms) : std::to_string(min_bottoms) + " or more"));
  }
  if (tops >= 0 && l.p.top_size() != tops) {
    return l.error("has " + std::to_string(l.p.top_size()) + " top(s), expected " + std::to_string(tops));
  }
  return Status::ok();
}

// Caffe's axis convention: [-rank, rank).
Result<int> layer_axis(const Layer& l, int axis, int rank, const char* field) {
  auto a = normalize_axis(axis, rank);
  if (!a)
    return l.error(std::string(field) + " " + std::to_string(axis) + " is out of range for a rank-" +
                   std::to_string(rank) + " input");
  return *a;
}

Tensor scalar(float v) { return Tensor(Shape{1}, {v}); }

// Spatial value from the _h/_w pair or the repeated/optional plain field.
Result<std::array<int, 2>> spatial(const Layer& l, const char* name, bool has_h, uint32_t h, bool has_w, uint32_t w,
                                   const std::vector<uint32_t>& plain, int fallback, bool required) {
  if (has_h || has_w) {
    if (!(has_h && has_w)) return l.error(std::string("set both ") + name + "_h and " + name + "_w, or " + name);
    if (!plain.empty()) return l.error(std::string("set either ") + name + " or " + name + "_h/" + name + "_w");
    return std::array<int, 2>{static_cast<int>(h), static_cast<int>(w)};
  }
  if (plain.empty()) {
    if (required) return l.error(std::string(name) + " is required");
    return std::array<int, 2>{fallback, fallback};
  }
  if (plain.size() > 2) {
    return l.unsupported(std::string(name) + " has " + std::to_string(plain.size()) +
                         " values; only 2-D (NCHW) layers are supported");
  }
  return std::array<int, 2>{static_cast<int>(plain[0]), static_cast<int>(plain.back())};
}

template <class R>
std::vector<uint32_t> values(const R& repeated) {
  return std::vector<uint32_t>(repeated.begin(), repeated.end());
}

Status convert_convolution(NetBuilder& b, const Layer& l) {
  TESSERA_RETURN_IF_ERROR(expect_counts(l, 1, 1, 1));
  const auto& p = l.p.convolution_param();
  if (p.axis() != 1) return l.unsupported("axis " + std::to_string(p.axis()) + " (only 1, NCHW) is supported");
  if (!p.has_num_output() || p.num_output() < 1) return l.error("num_output is required and must be positive");
  TESSERA_ASSIGN_OR_RETURN(std::string x, b.bottom(l, 0));
  const Shape& in = b.shape_of(x);
  if (in.size() != 4) return l.unsupported("input " + shape_to_string(in) + " is not 4-D NCHW");
  ConvAttrs conv;
  TESSERA_ASSIGN_OR_RETURN(conv.kernel, spatial(l, "kernel", p.has_kernel_h(), p.kernel_h(), p.has_kernel_w(),
                                                p.kernel_w(), values(p.kernel_size()), 1, true));
  TESSERA_ASSIGN_OR_RETURN(conv.stride, spatial(l, "stride", p.has_stride_h(), p.stride_h(), p.has_stride_w(),
                                                p.stride_w(), values(p.stride()), 1, false));
  TESSERA_ASSIGN_OR_RETURN(
      Pair pad, spatial(l, "pad", p.has_pad_h(), p.pad_h(), p.has_pad_w(), p.pad_w(), values(p.pad()), 0, false));
  TESSERA_ASSIGN_OR_RETURN(conv.dilation, spatial(l, "dilation", false, 0, false, 0, values(p.dilation()), 1, false));
  for (int v : {conv.kernel[0], conv.kernel[1], conv.stride[0], conv.stride[1], conv.dilation[0], conv.dilation[1]}) {
    if (v < 1) return l.error("kernel, stride and dilation must be positive");
  }
  conv.pads = {pad[0], pad[1], pad[0], pad[1]};
  conv.group = static_cast<int>(p.group());
  const int64_t out_c = p.num_output();
  if (conv.group < 1 || in[1] % conv.group != 0 || out_c % conv.group != 0) {
    return l.error("group " + std::to_string(p.group()) + " must divide the input channels (" + std::to_string(in[1]) +
                   ") and num_output (" + std::to_string(out_c) + ")");
  }
  TESSERA_ASSIGN_OR_RETURN(Tensor w,
                           b.weight(l, 0, {out_c, in[1] / conv.group, conv.kernel[0], conv.kernel[1]}, "filter"));
  std::vector<std::string> inputs{x, b.constant(l.name + "/weight", std::move(w))};
  if (p.bias_term()) {
    TESSERA_ASSIGN_OR_RETURN(Tensor bias, b.weight(l, 1, {out_c}, "bias"));
    inputs.push_back(b.constant(l.name + "/bias", std::move(bias)));
  }
  TESSERA_ASSIGN_OR_RETURN(std::string y, b.node(l, OpKind::kConv, inputs, conv));
  b.set_top(l, 0, y);
  return Status::ok();
}

// Caffe's pooled size: ceil (or floor) of (in + 2 pad - kernel) / stride, plus one; with padding,
// a last window starting at or beyond in + pad is dropped.
int64_t caffe_pooled_dim(int64_t in, int kernel, int stride, int pad, bool ceil_mode) {
  const int64_t span = in + 2 * pad - kernel;
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  if (pad > 0 && (out - 1) * stride >= in + pad) --out;
  return out;
}

Status convert_pooling(NetBuilder& b, const Layer& l) {
  TESSERA_RETURN_IF_ERROR(expect_counts(l, 1, 1, 1));
  const auto& p = l.p.pooling_param();
  TESSERA_ASSIGN_OR_RETURN(std::string x, b.bottom(l, 0));
  const Shape& in = b.shape_of(x);
  if (in.size() != 4) return l.unsupported("input " + shape_to_string(in) + " is not 4-D NCHW");
  if (p.pool() == caffe::PoolingParameter::STOCHASTIC) return l.unsupported("STOCHASTIC pooling is not supported");
  const bool max = p.pool() == caffe::PoolingParameter::MAX;
  if (p.global_pooling()) {
    if (p.has_kernel_size() || p.has_kernel_h() || p.has_kernel_w()) {
      return l.error("global_pooling takes no kernel size");
    }
    if (p.pad() || p.pad_h() || p.pad_w() || p.stride() != 1 || p.has_stride_h() || p.has_stride_w()) {
      return l.error("global_pooling needs pad 0 and stride 1");
    }
    if (!max) {
      TESSERA_ASSIGN_OR_RETURN(std::string y, b.node(l, OpKind::kGlobalAveragePool, {x}, std::monostate{}));
      b.set_top(l, 0, y);
      return Status::ok();
    }
    PoolAttrs pool;
    pool.kernel = {static_cast<int>(in[2]), static_cast<int>(in[3])};
    TESSERA_ASSIGN_OR_RETURN(std::string y, b.node(l, OpKind::kMaxPool, {x}, pool));
    b.set_top(l, 0, y);
    return Status::ok();
  }
  std::vector<uint32_t> kernel_size, stride, pad;
  if (p.has_kernel_size()) kernel_size.push_back(p.kernel_size());
  if (p.has_stride() || !(p.has_stride_h() || p.has_stride_w())) stride.push_back(p.stride());
  if (p.has_pad() || !(p.has_pad_h() || p.has_pad_w())) pad.push_back(p.pad());
  PoolAttrs pool;
  TESSERA_ASSIGN_OR_RETURN(pool.kernel, spatial(l, "kernel", p.has_kernel_h(), p.kernel_h(), p.has_kernel_w(),
                                                p.kernel_w(), kernel_size, 1, true));
  TESSERA_ASSIGN_OR_RETURN(pool.stride, spatial(l, "stride", p.has_stride_h(), p.stride_h(), p.has_stride_w(),
                                                p.stride_w(), stride, 1, false));
  TESSERA_ASSIGN_OR_RETURN(Pair pads,
                           spatial(l, "pad", p.has_pad_h(), p.pad_h(), p.has_pad_w(), p.pad_w(), pad, 0, false));
  for (int i = 0; i < 2; ++i) {
    if (pool.kernel[static_cast<size_t>(i)] < 1 || pool.stride[static_cast<size_t>(i)] < 1) {
      return l.error("kernel and stride must be positive");
    }
    if (pads[static_cast<size_t>(i)] >= pool.kernel[static_cast<size_t>(i)]) {
      return l.error("pad must be smaller than the kernel");
    }
  }
  pool.pads = {pads[0], pads[1], pads[0], pads[1]};
  if (p.has_round_mode() && p.has_ceil_mode()) return l.error("set either round_mode or ceil_mode, not both");
  pool.ceil_mode = p.has_ceil_mode() ? p.ceil_mode() : p.round_mode() == caffe::PoolingParameter::CEIL;
  pool.count_include_pad = !max;  // Caffe's AVE divides by the window clipped to the padded input
  // The IR's ceil rule drops a last window starting beyond the input even without padding
  // (PyTorch's); Caffe keeps it only when the stride exceeds the kernel. Refuse that corner.
  TESSERA_ASSIGN_OR_RETURN(Shape ir, [&]() -> Result<Shape> {
    auto s = pool_output_shape(in, pool);
    if (!s) return l.error(s.status().message());
    return *s;
  }());
  for (int i = 0; i < 2; ++i) {
    const auto u = static_cast<size_t>(i);
    const int64_t want = caffe_pooled_dim(in[2 + u], pool.kernel[u], pool.stride[u], pads[u], pool.ceil_mode);
    if (want != ir[2 + u]) {
      return l.unsupported("Caffe's pooled size " + std::to_string(want) +
                           " here includes a window that starts "
                           "outside the input (stride larger than the kernel); not supported");
    }
  }
  TESSERA_ASSIGN_OR_RETURN(std::string y, b.node(l, max ? OpKind::kMaxPool : OpKind::kAveragePool, {x}, pool));
  b.set_top(l, 0, y);
  return Status::ok();
}

Status convert_relu(NetBuilder& b, const Layer& l) {
  TESSERA_RETURN_IF_ERROR(expect_counts(l, 1, 1, 1));
  TESSERA_ASSIGN_OR_RETURN(std::string x, b.bottom(l, 0));
  const float slope = l.p.relu_param().negative_slope();
  TESSERA_ASSIGN_OR_RETURN(std::string r, b.node(l, OpKind::kRelu, {x}, std::monostate{}, slope == 0 ? "" : "/relu"));
  if (slope == 0) {
    b.set_top(l, 0, r);
    return Status::ok();
  }
  // Leaky ReLU: y = slope * x + (1 - slope) * relu(x), exact for either sign of x.
  const std::string keep = b.constant(l.name + "/positive_part", scalar(1.0f - slope));
  const std::string leak = b.constant(l.name + "/negative_slope", scalar(slope));
  TESSERA_ASSIGN_OR_RETURN(std::string pos, b.node(l, OpKind::kMul, {r, keep}, std::monostate{}, "/positive"));
  TESSERA_ASSIGN_OR_RETURN(std::string lin, b.node(l, OpKind::kMul, {x, leak}, std::monostate{}, "/linear"));
  TESSERA_ASSIGN_OR_RETURN(std::string y, b.node(l, OpKind::kAdd, {pos, lin}, std::monostate{}));
  b.set_top(l, 0, y);
  return Status::ok();
}

Status convert_inner_product(NetBuilder& b, const Layer& l) {
  TESSERA_RETURN_IF_ERROR(expect_counts(l, 1, 1, 1));
  const auto& p = l.p.inner_product_param();
  if (!p.has_num_output() || p.num_output() < 1) return l.error("num_output is required and must be positive");
  TESSERA_ASSIGN_OR_RETURN(std::string x, b.bottom(l, 0));
  const Shape in = b.shape_of(x);
  TESSERA_ASSIGN_OR_RETURN(int axis, layer_axis(l, p.axis(), static_cast<int>(in.size()), "axis"));
  if (axis == 0) return l.unsupported("axis 0 (folding the batch into the features) is not supported");
  int64_t k = 1;
  for (size_t d = static_cast<size_t>(axis); d < in.size(); ++d) k *= in[d];
  const int64_t n = p.num_output();
  TESSERA_ASSIGN_OR_RETURN(Tensor w, b.weight(l, 0, p.transpose() ? Shape{k, n} : Shape{n, k}, "weights"));
  std::string flat = x;
  if (in.size() != 2 || axis != 1) {
    TESSERA_ASSIGN_OR_RETURN(flat, b.node(l, OpKind::kFlatten, {x}, AxisAttrs{axis}, "/flatten"));
  }
  std::vector<std::string> inputs{flat, b.constant(l.name + "/weight", std::move(w))};
  if (p.bias_term()) {
    TESSERA_ASSIGN_OR_RETURN(Tensor bias, b.weight(l, 1, {n}, "bias"));
    inputs.push_back(b.constant(l.name + "/bias", std::move(bias)));
  }
  GemmAttrs gemm;
  gemm.trans_b = !p.transpose();
  const bool restore = axis != 1;
  TESSERA_ASSIGN_OR_RETURN(std::string y, b.node(l, OpKind::kGemm, inputs, gemm, restore ? "/gemm" : ""));
  if (restore) {
    // Caffe keeps the leading dims: [d0 .. d(axis-1), num_output].
    ReshapeAttrs reshape;
    reshape.shape.push_back(-1);  // the batch (the Gemm's rows are batch x the kept dims)
    for (int d = 1; d < axis; ++d) reshape.shape.push_back(in[static_cast<size_t>(d)]);
    reshape.shape.push_back(n);
    TESSERA_ASSIGN_OR_RETURN(y, b.node(l, OpKind::kReshape, {y}, reshape));
  }
  b.set_top(l, 0, y);
  return Status::ok();
}

Status convert_lrn(NetBuilder& b, const Layer& l) {
  TESSERA_RETURN_IF_ERROR(expect_counts(l, 1, 1, 1));
  const auto& p = l.p.lrn_param();
  if (p.local_size() < 1 || p.local_size() % 2 == 0) return l.error("local_size must be odd");
  TESSERA_ASSIGN_OR_RETURN(std::string x, b.bottom(l, 0));
  if (b.shape_of(x).size() != 4) return l.unsupported("input is not 4-D NCHW");
  LrnAttrs lrn;
  lrn.size = static_cast<int>(p.local_size());
  lrn.alpha = p.alpha();
  lrn.beta = p.beta();
  lrn.bias = p.k();
  if (p.norm_region() == caffe::LRNParameter::WITHIN_CHANNEL) {
    lrn.within_channel = true;
    lrn.bias = 1.0f;  // Caffe's WITHIN_CHANNEL computes (1 + alpha * mean(x^2))^-beta; k is not used
  }
  TESSERA_ASSIGN_OR_RETURN(std::string y, b.node(l, OpKind::kLrn, {x}, lrn));
  b.set_top(l, 0, y);
  return Status::ok();
}

Status convert_concat(NetBuilder& b, const Layer& l) {
  TESSERA_RETURN_IF_ERROR(expect_counts(l, 1, 1 << 16, 1));
  const auto& p = l.p.concat_param();
  std::vector<std::string> inputs;
  for (int i = 0; i < l.p.bottom_size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(std::string x, b.bottom(l, i));
    inputs.push_back(x);
  }
  const int rank = static_cast<int>(b.shape_of(inputs[0]).size());
  const int raw = p.has_concat_dim() ? static_cast<int>(p.concat_dim()) : p.axis();
  TESSERA_ASSIGN_OR_RETURN(int axis, layer_axis(l, raw, rank, "axis"));
  if (inputs.size() == 1) {
    b.set_top(l, 0, inputs[0]);
    return Status::ok();
  }
  TESSERA_ASSIGN_OR_RETURN(std::string y, b.node(l, OpKind::kConcat, inputs, AxisAttrs{axis}));
  b.set_top(l, 0, y);
  return Status::ok();
}

Status convert_eltwise(NetBuilder& b, const Layer& l) {
  TESSERA_RETURN_IF_ERROR(expect_counts(l, 2, 1 << 16, 1));
  const auto& p = l.p.eltwise_param();
  std::vector<std::string> inputs;
  for (int i = 0; i < l.p.bottom_size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(std::string x, b.bottom(l, i));
    if (b.shape_of(x) != b.shape_of(inputs.empty() ? x : inputs[0])) {
      return l.error("bottom '" + l.p.bottom(i) + "' " + shape_to_string(b.shape_of(x)) + " differs from bottom '" +
                     l.p.bottom(0) + "' " + shape_to_string(b.shape_of(inputs[0])) + "; Eltwise needs equal shapes");
    }
    inputs.push_back(x);
  }
  const size_t n = inputs.size();
  const auto op = p.operation();
  if (p.coeff_size() > 0 && op != caffe::EltwiseParameter::SUM) return l.error("coeff is only for operation SUM");
  if (p.coeff_size() > 0 && static_cast<size_t>(p.coeff_size()) != n) {
    return l.error("has " + std::to_string(p.coeff_size()) + " coeff values for " + std::to_string(n) + " bottoms");
  }
  std::string acc;
  for (size_t i = 0; i < n; ++i) {
    const bool last = i + 1 == n;
    const std::string step = "/" + std::to_string(i);
    std::string term = inputs[i];
    if (op == caffe::EltwiseParameter::SUM) {
      const float c = p.coeff_size() > 0 ? p.coeff(static_cast<int>(i)) : 1.0f;
      if (c != 1.0f) {
        const std::string k = b.constant(l.name + "/coeff" + step, scalar(c));
        TESSERA_ASSIGN_OR_RETURN(term, b.node(l, OpKind::kMul, {term, k}, std::monostate{}, "/scaled" + step));
      }
      if (i == 0) {
        acc = term;
        continue;
      }
      TESSERA_ASSIGN_OR_RETURN(acc, b.node(l, OpKind::kAdd, {acc, term}, std::monostate{}, last ? "" : "/sum" + step));
    } else if (op == caffe::EltwiseParameter::PROD) {
      if (i == 0) {
        acc = term;
        continue;
      }
      TESSERA_ASSIGN_OR_RETURN(acc, b.node(l, OpKind::kMul, {acc, term}, std::monostate{}, last ? "" : "/prod" + step));
    } else {
      if (i == 0) {
        acc = term;
        continue;
      }
      // max(a, b) = a + relu(b - a)
      const std::string minus = b.constant(l.name + "/minus_one" + step, scalar(-1.0f));
      TESSERA_ASSIGN_OR_RETURN(std::string neg, b.node(l, OpKind::kMul, {acc, minus}, std::monostate{}, "/neg" + step));
      TESSERA_ASSIGN_OR_RETURN(std::string diff,
                               b.node(l, OpKind::kAdd, {term, neg}, std::monostate{}, "/diff" + step));
      TESSERA_ASSIGN_OR_RETURN(std::string excess,
                               b.node(l, OpKind::kRelu, {diff}, std::monostate{}, "/excess" + step));
      TESSERA_ASSIGN_OR_RETURN(acc,
                               b.node(l, OpKind::kAdd, {acc, excess}, std::monostate{}, last ? "" : "/max" + step));
    }
  }
  b.set_top(l, 0, acc);
  return Status::ok();
}

// BatchNorm: blobs mean, variance (both scaled by blob 2's factor) -> an IR BatchNorm with unit
// scale and zero bias; a following Scale layer folds its gamma/beta into them.
Status convert_batch_norm(NetBuilder& b, const Layer& l) {
  TESSERA_RETURN_IF_ERROR(expect_counts(l, 1, 1, 1));
  const auto& p = l.p.batch_norm_param();
  if (p.has_use_global_stats() && !p.use_global_stats()) {
    return l.unsupported(
        "use_global_stats: false (batch statistics) is a training setting; deploy needs the stored ones");
  }
  TESSERA_ASSIGN_OR_RETURN(std::string x, b.bottom(l, 0));
  const Shape& in = b.shape_of(x);
  if (in.size() < 2) return l.error("input " + shape_to_string(in) + " has no channel axis");
  const int64_t c = in[1];
  TESSERA_ASSIGN_OR_RETURN(Tensor mean, b.weight(l, 0, {c}, "mean"));
  TESSERA_ASSIGN_OR_RETURN(Tensor var, b.weight(l, 1, {c}, "variance"));
  TESSERA_ASSIGN_OR_RETURN(Tensor factor, b.weight(l, 2, {1}, "moving-average factor"));
  const float f = factor.data[0] == 0.0f ? 0.0f : 1.0f / factor.data[0];
  for (float& v : mean.data) v *= f;
  for (float& v : var.data) v *= f;
  BatchNormAttrs bn;
  bn.epsilon = p.eps();
  std::vector<std::string> inputs{
      x, b.constant(l.name + "/scale", Tensor(Shape{c}, std::vector<float>(static_cast<size_t>(c), 1.0f))),
      b.constant(l.name + "/shift", Tensor(Shape{c})), b.constant(l.name + "/mean", std::move(mean)),
      b.constant(l.name + "/variance", std::move(var))};
  TESSERA_ASSIGN_OR_RETURN(std::string y, b.node(l, OpKind::kBatchNorm, inputs, bn));
  b.set_top(l, 0, y);
  return Status::ok();
}

Status convert_scale(NetBuilder& b, const Layer& l) {
  TESSERA_RETURN_IF_ERROR(expect_counts(l, 1, 2, 1));
  if (l.p.bottom_size() == 2)
    return l.unsupported("Scale with a second bottom (a learned-at-run-time scale) is not supported");
  const auto& p = l.p.scale_param();
  TESSERA_ASSIGN_OR_RETURN(std::string x, b.bottom(l, 0));
  const Shape in = b.shape_of(x);
  TESSERA_ASSIGN_OR_RETURN(int axis, layer_axis(l, p.axis(), static_cast<int>(in.size()), "axis"));
  const int end = p.num_axes() == -1 ? static_cast<int>(in.size()) : axis + p.num_axes();
  if (p.num_axes() < -1 || end > static_cast<int>(in.size()))
    return l.error("num_axes does not fit the input " + shape_to_string(in));
  Shape param(in.begin() + axis, in.begin() + end);
  TESSERA_ASSIGN_OR_RETURN(Tensor gamma, b.weight(l, 0, param, "scale"));
  Tensor beta;
  if (p.bias_term()) {
    TESSERA_ASSIGN_OR_RETURN(beta, b.weight(l, 1, param, "bias"));
  }
  // Folded into the BatchNorm it follows (its only reader, per channel).
  Node* bn = b.producer(x);
  if (bn && bn->op == OpKind::kBatchNorm && axis == 1 && param.size() == 1 && !b.consumed_by_node(x)) {
    b.mutable_constant(bn->inputs[1])->data = gamma.data;
    if (p.bias_term()) b.mutable_constant(bn->inputs[2])->data = beta.data;
    b.set_top(l, 0, x);
    return Status::ok();
  }
  // Otherwise x * gamma (+ beta), the parameters shaped to broadcast over the trailing dims.
  Shape bshape = param;
  for (size_t d = static_cast<size_t>(end); d < in.size(); ++d) bshape.push_back(1);
  gamma.shape = bshape;
  const std::string g = b.constant(l.name + "/scale", std::move(gamma));
  TESSERA_ASSIGN_OR_RETURN(std::string y,
                           b.node(l, OpKind::kMul, {x, g}, std::monostate{}, p.bias_term() ? "/mul" : ""));
  if (p.bias_term()) {
    beta.shape = bshape;
    const std::string bb = b.constant(l.name + "/bias", std::move(beta));
    TESSERA_ASSIGN_OR_RETURN(y, b.node(l, OpKind::kAdd, {y, bb}, std::monostate{}));
  }
  b.set_top(l, 0, y);
  return Status::ok();
}

// Dropout (inference: identity) and Split (every top is the bottom): no node, only names.
Status convert_alias(NetBuilder& b, const Layer& l, bool split) {
  TESSERA_RETURN_IF_ERROR(expect_counts(l, 1, 1, split ? -1 : 1));
  TESSERA_ASSIGN_OR_RETURN(std::string x, b.bottom(l, 0));
  for (int i = 0; i < l.p.top_size(); ++i) b.set_top(l, i, x);
  return Status::ok();
}

Status convert_softmax(NetBuilder& b, const Layer& l) {
  TESSERA_RETURN_IF_ERROR(expect_counts(l, 1, 1, 1));
  TESSERA_ASSIGN_OR_RETURN(std::string x, b.bottom(l, 0));
  TESSERA_ASSIGN_OR_RETURN(int axis,
                           layer_axis(l, l.p.softmax_param().axis(), static_cast<int>(b.shape_of(x).size()), "axis"));
  TESSERA_ASSIGN_OR_RETURN(std::string y, b.node(l, OpKind::kSoftmax, {x}, AxisAttrs{axis}));
  b.set_top(l, 0, y);
  return Status::ok();
}

Status convert_flatten(NetBuilder& b, const Layer& l) {
  TESSERA_RETURN_IF_ERROR(expect_counts(l, 1, 1, 1));
  TESSERA_ASSIGN_OR_RETURN(std::string x, b.bottom(l, 0));
  const Shape in = b.shape_of(x);
  const int rank = static_cast<int>(in.size());
  TESSERA_ASSIGN_OR_RETURN(int axis, layer_axis(l, l.p.flatten_param().axis(), rank, "axis"));
  TESSERA_ASSIGN_OR_RETURN(int end, layer_axis(l, l.p.flatten_param().end_axis(), rank, "end_axis"));
  if (end < axis) return l.error("end_axis comes before axis");
  if (axis == 0) return l.unsupported("axis 0 (folding the batch into the features) is not supported");
  std::string y;
  if (axis == 1 && end == rank - 1) {
    TESSERA_ASSIGN_OR_RETURN(y, b.node(l, OpKind::kFlatten, {x}, AxisAttrs{1}));
  } else {
    ReshapeAttrs reshape;
    for (int d = 0; d < axis; ++d) reshape.shape.push_back(d == 0 ? 0 : in[static_cast<size_t>(d)]);
    int64_t merged = 1;
    for (int d = axis; d <= end; ++d) merged *= in[static_cast<size_t>(d)];
    reshape.shape.push_back(merged);
    for (int d = end + 1; d < rank; ++d) reshape.shape.push_back(in[static_cast<size_t>(d)]);
    TESSERA_ASSIGN_OR_RETURN(y, b.node(l, OpKind::kReshape, {x}, reshape));
  }
  b.set_top(l, 0, y);
  return Status::ok();
}

// Reshape: dims [axis, axis + num_axes) of the input are replaced by `shape` (0 copies the input
// dim at that position, one -1 is inferred: the IR's Reshape rules at the same positions).
Status convert_reshape(NetBuilder& b, const Layer& l) {
  TESSERA_RETURN_IF_ERROR(expect_counts(l, 1, 1, 1));
  const auto& p = l.p.reshape_param();
  TESSERA_ASSIGN_OR_RETURN(std::string x, b.bottom(l, 0));
  const Shape in = b.shape_of(x);
  const int rank = static_cast<int>(in.size());
  int start = p.axis() >= 0 ? p.axis() : p.axis() + rank + 1;
  if (start < 0 || start > rank) return l.error("axis " + std::to_string(p.axis()) + " is out of range");
  const int end = p.num_axes() == -1 ? rank : start + p.num_axes();
  if (p.num_axes() < -1 || end > rank) return l.error("num_axes " + std::to_string(p.num_axes()) + " is out of range");
  ReshapeAttrs reshape;
  for (int d = 0; d < start; ++d) reshape.shape.push_back(0);
  for (int64_t v : p.shape().dim()) {
    if (v < -1) return l.error("shape dim " + std::to_string(v) + " is invalid");
    reshape.shape.push_back(v);
  }
  for (int d = end; d < rank; ++d) reshape.shape.push_back(d == 0 ? 0 : in[static_cast<size_t>(d)]);
  // A literal batch size (the prototxt's num) would fix the batch; keep the batch dim as it is.
  if (start == 0 && !reshape.shape.empty() && reshape.shape[0] == in[0]) reshape.shape[0] = 0;
  TESSERA_ASSIGN_OR_RETURN(std::string y, b.node(l, OpKind::kReshape, {x}, reshape));
  b.set_top(l, 0, y);
  return Status::ok();
}

Status convert_input(NetBuilder& b, const Layer& l) {
  if (l.p.bottom_size() != 0) return l.error("an Input layer has no bottoms");
  const auto& p = l.p.input_param();
  if (l.p.top_size() < 1) return l.error("has no top");
  if (p.shape_size() != 1 && p.shape_size() != l.p.top_size()) {
    return l.error("has " + std::to_string(p.shape_size()) + " shapes for " + std::to_string(l.p.top_size()) + " tops");
  }
  for (int i = 0; i < l.p.top_size(); ++i) {
    const auto& s = p.shape(p.shape_size() == 1 ? 0 : i);
    TESSERA_RETURN_IF_ERROR(b.add_input(l.p.top(i), Shape(s.dim().begin(), s.dim().end()), l.label));
  }
  return Status::ok();
}

const std::map<std::string, Converter>& converters() {
  static const std::map<std::string, Converter> table = {
      {"Input", convert_input},
      {"Convolution", convert_convolution},
      {"Pooling", convert_pooling},
      {"ReLU", convert_relu},
      {"InnerProduct", convert_inner_product},
      {"LRN", convert_lrn},
      {"Concat", convert_concat},
      {"Eltwise", convert_eltwise},
      {"BatchNorm", convert_batch_norm},
      {"Scale", convert_scale},
      {"Dropout", [](NetBuilder& b, const Layer& l) { return convert_alias(b, l, false); }},
      {"Split", [](NetBuilder& b, const Layer& l) { return convert_alias(b, l, true); }},
      {"Softmax", convert_softmax},
      {"Flatten", convert_flatten},
      {"Reshape", convert_reshape},
  };
  return table;
}

}  // namespace

std::string describe_layer(const caffe::LayerParameter& layer) {
  std::string name = layer.name();
  if (name.empty() && layer.top_size() > 0) name = layer.top(0);
  return "layer '" + name + "' (" + (layer.type().empty() ? std::string("no type") : layer.type()) + ")";
}

bool is_supported_layer_type(const std::string& type) { return converters().count(type) != 0; }

Status unsupported_layer_error(const caffe::LayerParameter& layer) {
  std::string hint;
  const std::string& t = layer.type();
  if (t.find("Loss") != std::string::npos || t == "Accuracy" || t.find("Data") != std::string::npos) {
    hint = " (a training layer: import the deploy prototxt, not train_val)";
  }
  return Status::unimplemented(describe_layer(layer) + ": layer type '" + t + "' is not supported by Tessera" + hint);
}

Result<Tensor> blob_to_tensor(const caffe::BlobProto& blob, const std::string& what) {
  Shape shape;
  if (blob.has_shape()) {
    shape.assign(blob.shape().dim().begin(), blob.shape().dim().end());
  } else if (blob.has_num() || blob.has_channels() || blob.has_height() || blob.has_width()) {
    shape = {blob.num(), blob.channels(), blob.height(), blob.width()};
  } else {
    shape = {static_cast<int64_t>(std::max(blob.data_size(), blob.double_data_size()))};
  }
  for (int64_t d : shape) {
    if (d < 0) return Status::invalid_argument(what + " has a negative dim in " + shape_to_string(shape));
  }
  Tensor t;
  t.shape = shape;
  if (blob.data_size() > 0) {
    t.data.assign(blob.data().begin(), blob.data().end());
  } else {
    for (double v : blob.double_data()) t.data.push_back(static_cast<float>(v));
  }
  if (static_cast<int64_t>(t.data.size()) != shape_elements(shape)) {
    return Status::invalid_argument(what + " declares shape " + shape_to_string(shape) + " (" +
                                    std::to_string(shape_elements(shape)) + " values) but holds " +
                                    std::to_string(t.data.size()));
  }
  return t;
}

NetBuilder::NetBuilder(std::string name, WeightsByLayer weights, bool have_caffemodel)
    : weights_(std::move(weights)), have_caffemodel_(have_caffemodel) {
  graph_.name = std::move(name);
}

std::string NetBuilder::fresh_name(const std::string& base) {
  std::string name = base.empty() ? "tensor" : base;
  for (int i = 2; used_.count(name); ++i) name = base + "#" + std::to_string(i);
  used_.insert(name);
  return name;
}

Status NetBuilder::add_input(const std::string& blob, const Shape& shape, const std::string& what) {
  if (blob.empty()) return Status::invalid_argument(what + ": an input has no name");
  if (blobs_.count(blob)) return Status::invalid_argument(what + ": input '" + blob + "' is defined twice");
  if (shape.size() != 4) {
    return Status::unimplemented(what + ": input '" + blob + "' has shape " + shape_to_string(shape) +
                                 "; Tessera takes one N x C x H x W image input");
  }
  for (size_t d = 1; d < shape.size(); ++d) {
    if (shape[d] < 1)
      return Status::invalid_argument(what + ": input '" + blob + "' has shape " + shape_to_string(shape));
  }
  const std::string name = fresh_name(blob);
  Shape one = shape;
  one[0] = 1;
  shapes_[name] = one;
  Shape dynamic = shape;
  dynamic[0] = -1;  // Caffe's num is only the default batch size
  graph_.inputs.push_back(ValueInfo{name, dynamic});
  blobs_[blob] = name;
  return Status::ok();
}

Result<std::string> NetBuilder::bottom(const Layer& l, int index) {
  const std::string& blob = l.p.bottom(index);
  auto it = blobs_.find(blob);
  if (it == blobs_.end()) return l.error("bottom '" + blob + "' is not produced by an earlier layer or an input");
  open_outputs_.erase(std::remove(open_outputs_.begin(), open_outputs_.end(), blob), open_outputs_.end());
  return it->second;
}

std::string NetBuilder::constant(const std::string& base, Tensor value) {
  const std::string name = fresh_name(base);
  graph_.constants[name] = std::move(value);
  return name;
}

Result<std::string> NetBuilder::node(const Layer& l, OpKind op, std::vector<std::string> inputs, NodeAttrs attrs,
                                     const std::string& suffix) {
  Node n;
  n.op = op;
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  // The layer's own output takes the top's name when that is free (not in place), else the
  // layer's name; helper nodes take the layer's name and a suffix.
  std::string out_base = l.name + suffix;
  if (suffix.empty() && l.p.top_size() > 0 && !used_.count(l.p.top(0))) out_base = l.p.top(0);
  n.name = l.name + suffix;
  n.outputs = {out_base};  // named for real below, once the shape checks out
  std::vector<const Shape*> operands;
  for (const std::string& in : n.inputs) {
    if (auto it = shapes_.find(in); it != shapes_.end()) {
      operands.push_back(&it->second);
    } else {
      operands.push_back(&graph_.constants.at(in).shape);
    }
  }
  auto shape = node_output_shape(n, operands);
  if (!shape) return l.error(shape.status().message());
  const std::string out = fresh_name(out_base);
  n.outputs = {out};
  shapes_[out] = *shape;
  graph_.nodes.push_back(std::move(n));
  return out;
}

void NetBuilder::set_top(const Layer& l, int index, const std::string& tensor) {
  const std::string& blob = l.p.top(index);
  blobs_[blob] = tensor;
  open_outputs_.erase(std::remove(open_outputs_.begin(), open_outputs_.end(), blob), open_outputs_.end());
  open_outputs_.push_back(blob);
}

int NetBuilder::weight_count(const Layer& l) const {
  auto it = weights_.find(l.p.name());
  return it == weights_.end() ? 0 : it->second->size();
}

Result<Tensor> NetBuilder::weight(const Layer& l, int index, const Shape& expected, const char* what) {
  auto it = weights_.find(l.p.name());
  if (it == weights_.end()) {
    return l.error(
        std::string("no trained weights for this layer") +
        (have_caffemodel_ ? " in the caffemodel (weights are matched by layer name)" : " (no caffemodel given)"));
  }
  if (index >= it->second->size()) {
    return l.error("the caffemodel has " + std::to_string(it->second->size()) + " blob(s) for this layer; blob " +
                   std::to_string(index) + " (" + what + ") is missing");
  }
  const caffe::BlobProto& blob = it->second->Get(index);
  TESSERA_ASSIGN_OR_RETURN(Tensor t, [&]() -> Result<Tensor> {
    auto r = blob_to_tensor(blob, std::string("blob ") + std::to_string(index) + " (" + what + ")");
    if (!r) return l.error(r.status().message());
    return r;
  }());
  // Caffe's rule: a BlobShape must match exactly; a legacy 4-D blob matches the expected shape
  // padded with leading 1s to four dims.
  bool fits = t.shape == expected;
  if (!fits && !blob.has_shape() && expected.size() <= 4) {
    Shape padded(4 - expected.size(), 1);
    padded.insert(padded.end(), expected.begin(), expected.end());
    fits = t.shape == padded;
  }
  if (!fits) {
    return l.error("blob " + std::to_string(index) + " (" + what + ") has shape " + shape_to_string(t.shape) +
                   " but the layer needs " + shape_to_string(expected));
  }
  t.shape = expected;
  return t;
}

Node* NetBuilder::producer(const std::string& tensor) {
  for (Node& n : graph_.nodes) {
    if (!n.outputs.empty() && n.outputs[0] == tensor) return &n;
  }
  return nullptr;
}

bool NetBuilder::consumed_by_node(const std::string& tensor) const {
  for (const Node& n : graph_.nodes) {
    if (std::find(n.inputs.begin(), n.inputs.end(), tensor) != n.inputs.end()) return true;
  }
  return false;
}

Status NetBuilder::add_layer(const caffe::LayerParameter& layer) {
  auto it = converters().find(layer.type());
  if (it == converters().end()) return unsupported_layer_error(layer);
  Layer l{layer, describe_layer(layer), layer.name()};
  if (l.name.empty()) l.name = layer.top_size() > 0 ? layer.top(0) : layer.type();
  for (const std::string& top : layer.top()) {
    if (top.empty()) return l.error("has an empty top name");
  }
  return it->second(*this, l);
}

Result<Graph> NetBuilder::finish() {
  if (graph_.inputs.empty()) {
    return Status::invalid_argument(
        "the network has no input (declare `input:` with `input_shape`, or an Input layer)");
  }
  for (const std::string& blob : open_outputs_) {
    const std::string& tensor = blobs_.at(blob);
    Shape s = shapes_.at(tensor);
    s[0] = -1;
    graph_.outputs.push_back(ValueInfo{tensor, s});
  }
  if (graph_.outputs.empty()) return Status::invalid_argument("the network has no output (no layer produces a blob)");
  TESSERA_RETURN_IF_ERROR(validate_graph(graph_));
  return std::move(graph_);
}

}  // namespace tessera::caffe_import
