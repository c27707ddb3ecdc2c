// Caffe's vision layers as IR nodes: Convolution, Pooling (Caffe's own pooled-size rule, checked
// against the IR's) and LRN.
#include <string>
#include <vector>

#include "accel/graph/op_shapes.h"
#include "accel/import/caffe/caffe_converters.h"

namespace tessera::caffe_import {

namespace {

// Caffe's pooled size: ceil (or floor) of (in + 2 pad - kernel) / stride, plus one; with padding,
// a last window starting at or beyond in + pad is dropped.
int64_t caffe_pooled_dim(int64_t in, int kernel, int stride, int pad, bool ceil_mode) {
  const int64_t span = in + 2 * pad - kernel;
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  if (pad > 0 && (out - 1) * stride >= in + pad) --out;
  return out;
}

}  // namespace

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

}  // namespace tessera::caffe_import
