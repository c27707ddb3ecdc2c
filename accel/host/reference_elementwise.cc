// Reference Relu, Clip, Identity, and the broadcasting binary ops Add, Mul, Sub, Div and Pow.
#include <algorithm>
#include <cmath>
#include <utility>

#include "accel/graph/op_shapes.h"
#include "accel/host/host_threads.h"
#include "accel/host/reference_ops.h"

namespace tessera::host {
namespace {

// Element strides of `s` seen through the output shape `out` (0 where `s` broadcasts).
std::vector<int64_t> broadcast_strides(const Shape& s, const Shape& out) {
  std::vector<int64_t> strides(out.size(), 0);
  int64_t stride = 1;
  const size_t offset = out.size() - s.size();
  for (size_t d = s.size(); d-- > 0;) {
    if (s[d] != 1) strides[d + offset] = stride;
    stride *= s[d];
  }
  return strides;
}

// y = f(a, b) elementwise with numpy broadcasting; the innermost dim runs as a strided loop.
template <class F>
Result<Tensor> broadcast_binary(const Tensor& a, const Tensor& b, F f, const Activation& act = {}) {
  TESSERA_ASSIGN_OR_RETURN(Shape out_shape, broadcast_shape(a.shape, b.shape));
  Tensor y(out_shape);
  const float* ap = a.ptr();
  const float* bp = b.ptr();
  float* yp = y.ptr();
  if (a.shape == b.shape) {
    parallel_for(y.elements(), 1, kSplitElements, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) yp[i] = f(ap[i], bp[i]);
      apply_activation(act, yp + begin, yp + end);
    });
    return y;
  }
  if (out_shape.empty() || y.elements() == 0) {
    if (y.elements() == 1) yp[0] = f(ap[0], bp[0]);
    return y;
  }
  const std::vector<int64_t> sa = broadcast_strides(a.shape, out_shape);
  const std::vector<int64_t> sb = broadcast_strides(b.shape, out_shape);
  const size_t r = out_shape.size();
  const int64_t inner = out_shape[r - 1], ia = sa[r - 1], ib = sb[r - 1];
  std::vector<int64_t> index(r - 1, 0);
  for (int64_t base = 0; base < y.elements(); base += inner) {
    int64_t oa = 0, ob = 0;
    for (size_t d = 0; d + 1 < r; ++d) {
      oa += index[d] * sa[d];
      ob += index[d] * sb[d];
    }
    for (int64_t j = 0; j < inner; ++j) yp[base + j] = f(ap[oa + j * ia], bp[ob + j * ib]);
    for (size_t d = r - 1; d-- > 0;) {
      if (++index[d] < out_shape[d]) break;
      index[d] = 0;
    }
  }
  apply_activation(act, yp, yp + y.elements());
  return y;
}

}  // namespace

void apply_activation(const Activation& act, float* begin, float* end) {
  switch (act.kind) {
    case Activation::Kind::kNone: return;
    case Activation::Kind::kRelu:
      for (float* v = begin; v != end; ++v) *v = std::max(*v, 0.0f);  // NaN stays NaN
      return;
    case Activation::Kind::kClip:
      for (float* v = begin; v != end; ++v) *v = std::min(std::max(*v, act.min), act.max);
      return;
  }
}

namespace {

Tensor activate(Tensor x, const Activation& act) {
  float* p = x.ptr();
  parallel_for(x.elements(), 1, kSplitElements,
               [&](int64_t begin, int64_t end) { apply_activation(act, p + begin, p + end); });
  return x;
}

}  // namespace

Result<Tensor> relu(Tensor x) { return activate(std::move(x), {Activation::Kind::kRelu}); }

Result<Tensor> clip(Tensor x, const ClipAttrs& attrs) {
  return activate(std::move(x), {Activation::Kind::kClip, attrs.min, attrs.max});
}

Result<Tensor> identity(Tensor x) { return x; }

Result<Tensor> add(const Tensor& a, const Tensor& b, const Activation& activation) {
  return broadcast_binary(
      a, b, [](float u, float v) { return u + v; }, activation);
}

Result<Tensor> mul(const Tensor& a, const Tensor& b) {
  return broadcast_binary(a, b, [](float u, float v) { return u * v; });
}

Result<Tensor> sub(const Tensor& a, const Tensor& b) {
  return broadcast_binary(a, b, [](float u, float v) { return u - v; });
}

Result<Tensor> div(const Tensor& a, const Tensor& b) {
  return broadcast_binary(a, b, [](float u, float v) { return u / v; });
}

Result<Tensor> pow(const Tensor& a, const Tensor& b) {
  if (b.elements() == 1 && b.data[0] == 2.0f) {
    return broadcast_binary(a, b, [](float u, float) { return u * u; });
  }
  return broadcast_binary(a, b, [](float u, float v) { return std::pow(u, v); });
}

}  // namespace tessera::host
