// Caffe's arithmetic layers as IR nodes: InnerProduct (Gemm), ReLU (leaky too), Eltwise (SUM with
// coefficients, PROD, MAX), BatchNorm, Scale (folded into the BatchNorm it follows) and Softmax.
#include <string>
#include <vector>

#include "accel/import/caffe/caffe_converters.h"

namespace tessera::caffe_import {

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
    // Appended, not "/" + std::to_string(i): gcc 12 -O3 reports a false -Wrestrict on the latter here.
    const std::string step = std::string("/").append(std::to_string(i));
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

Status convert_softmax(NetBuilder& b, const Layer& l) {
  TESSERA_RETURN_IF_ERROR(expect_counts(l, 1, 1, 1));
  TESSERA_ASSIGN_OR_RETURN(std::string x, b.bottom(l, 0));
  TESSERA_ASSIGN_OR_RETURN(int axis,
                           layer_axis(l, l.p.softmax_param().axis(), static_cast<int>(b.shape_of(x).size()), "axis"));
  TESSERA_ASSIGN_OR_RETURN(std::string y, b.node(l, OpKind::kSoftmax, {x}, AxisAttrs{axis}));
  b.set_top(l, 0, y);
  return Status::ok();
}

}  // namespace tessera::caffe_import
