// Float32 reference kernels, one function per operator: the "reference twins" optimised paths
// are checked against. Simple loops; conv, GEMM, pooling and the elementwise ops split
// large work across the host's thread budget (host_threads.h). Shapes follow accel/graph/op_shapes.h and a
// mismatch is an INVALID_ARGUMENT, never a crash. Tensors are NCHW where an op is spatial.
// Ops that may reuse their input's storage take it by value (pass std::move to avoid a copy).
#pragma once

#include <vector>

#include "accel/common/status.h"
#include "accel/graph/graph.h"
#include "accel/graph/tensor.h"

namespace tessera::host {

class ModelCache;  // model_cache.h

// An activation applied to an op's result as it is written: the executor fuses a Relu or Clip
// that is a Conv's or Add's only reader into it (the same values as the separate pass).
struct Activation {
  enum class Kind { kNone, kRelu, kClip };
  Kind kind = Kind::kNone;
  float min = 0.0f, max = 0.0f;  // kClip's bounds
};

// Applies `act` to [begin, end) in place.
void apply_activation(const Activation& act, float* begin, float* end);

struct ConvOptions {
  Activation activation;
  // Where oneDNN's reordered weights are kept for the model's life (null: reordered per call).
  ModelCache* cache = nullptr;
  // x's data, or the result's, in NHWC order (the shapes stay N,C,H,W): oneDNN's convs work in
  // NHWC, so a chain of them needs no layout copies between convs (see conv2d_prefers_nhwc).
  bool src_nhwc = false;
  bool dst_nhwc = false;
};

// Whether conv2d runs in NHWC without copies (oneDNN's path); the portable conv is NCHW and
// converts when asked for NHWC.
bool conv2d_prefers_nhwc();

// 2-D convolution: x [N,C,H,W], w [M,C/group,kH,kW], optional bias [M] (nullptr for none).
Result<Tensor> conv2d(const Tensor& x, const Tensor& w, const Tensor* bias, const ConvAttrs& attrs,
                      const ConvOptions& options = {});
// The same through the portable im2col + GEMM, whatever conv2d picks (oneDNN where built in): the
// twin the tests hold oneDNN's conv to, within float rounding.
Result<Tensor> conv2d_portable(const Tensor& x, const Tensor& w, const Tensor* bias, const ConvAttrs& attrs,
                               const Activation& activation = {});

// ---- NHWC forms: 4-D tensors whose shape is N,C,H,W and whose data is in N,H,W,C order ----
Tensor nhwc_to_nchw(const Tensor& x);
Tensor nchw_to_nhwc(const Tensor& x);
// max_pool2d of an NHWC tensor, NHWC out.
Result<Tensor> max_pool2d_nhwc(const Tensor& x, const PoolAttrs& attrs);
// global_average_pool of an NHWC tensor (the [N,C,1,1] result is the same in either order).
Result<Tensor> global_average_pool_nhwc(const Tensor& x);
// Concatenation of NHWC tensors along the channels, NHWC out.
Result<Tensor> concat_channels_nhwc(const std::vector<const Tensor*>& inputs);

Result<Tensor> relu(Tensor x);
Result<Tensor> clip(Tensor x, const ClipAttrs& attrs);
Result<Tensor> identity(Tensor x);

// Max over each window; padded positions never win.
Result<Tensor> max_pool2d(const Tensor& x, const PoolAttrs& attrs);
// Mean over each window; with count_include_pad the divisor counts padded positions (but not a
// ceil-mode window's part beyond the trailing pad, as PyTorch), else only input elements.
Result<Tensor> average_pool2d(const Tensor& x, const PoolAttrs& attrs);
// Mean over all spatial dims: [N,C,D1,...] -> [N,C,1,...].
Result<Tensor> global_average_pool(const Tensor& x);

// alpha * A' * B' + beta * C; c (nullptr for none) broadcasts to [M,N].
Result<Tensor> gemm(const Tensor& a, const Tensor& b, const Tensor* c, const GemmAttrs& attrs);
// Numpy matmul, including 1-D operands and broadcast batch dims.
Result<Tensor> matmul(const Tensor& a, const Tensor& b);

// Elementwise with numpy broadcasting; add applies `activation` to its result (fused Relu).
Result<Tensor> add(const Tensor& a, const Tensor& b, const Activation& activation = {});
Result<Tensor> mul(const Tensor& a, const Tensor& b);
Result<Tensor> sub(const Tensor& a, const Tensor& b);
Result<Tensor> div(const Tensor& a, const Tensor& b);
// a ** b; an exponent of exactly 2 is a * a.
Result<Tensor> pow(const Tensor& a, const Tensor& b);

// ---- Elementwise functions (reference_unary.cc), in place on x's storage ----
Result<Tensor> sigmoid(Tensor x);
Result<Tensor> hard_sigmoid(Tensor x, const HardSigmoidAttrs& attrs);
// x * hard_sigmoid(x) with alpha 1/6, beta 1/2 (ONNX HardSwish, PyTorch's hardswish).
Result<Tensor> hard_swish(Tensor x);
Result<Tensor> square_root(Tensor x);
Result<Tensor> erf(Tensor x);
// The exact (erf) GELU: x / 2 * (1 + erf(x / sqrt(2))).
Result<Tensor> gelu(Tensor x);

// ---- Layout, selection, reduction, normalisation (reference_tensor_ops.cc) ----
Result<Tensor> transpose(const Tensor& x, const std::vector<int>& perm);
Result<Tensor> slice(const Tensor& x, const SliceAttrs& attrs);
Result<Tensor> gather(const Tensor& x, const GatherAttrs& attrs);
Result<Tensor> pad(const Tensor& x, const PadAttrs& attrs);
Result<Tensor> reduce_mean(const Tensor& x, const ReduceAttrs& attrs);
// (x - mean) / sqrt(var + epsilon) * scale + bias over the dims from attrs.axis on; bias may be null.
Result<Tensor> layer_norm(const Tensor& x, const Tensor& scale, const Tensor* bias, const LayerNormAttrs& attrs);

// Concatenation along `axis` (negative counts from the end); with broadcast_batch, inputs whose
// dim 0 is 1 repeat along dim 0 (AxisAttrs::broadcast_batch).
Result<Tensor> concat(const std::vector<const Tensor*>& inputs, int axis, bool broadcast_batch = false);
Result<Tensor> flatten(Tensor x, int axis);
Result<Tensor> reshape(Tensor x, const ReshapeAttrs& attrs);

// Inference batch norm: (x - mean) / sqrt(var + epsilon) * scale + bias, per channel (dim 1).
Result<Tensor> batch_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& mean,
                          const Tensor& var, const BatchNormAttrs& attrs);
// Across-channel LRN as ONNX defines it.
Result<Tensor> lrn(const Tensor& x, const LrnAttrs& attrs);
// Softmax along `axis` (opset-13 semantics), max-subtracted for stability.
Result<Tensor> softmax(const Tensor& x, int axis);

}  // namespace tessera::host
