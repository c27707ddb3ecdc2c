// Reference elementwise functions: Sigmoid, HardSigmoid, HardSwish, Sqrt, Erf, GELU. Each runs in
// place on its operand's storage, split over the host's thread budget when large.
#include <algorithm>
#include <cmath>
#include <utility>

#include "accel/host/host_threads.h"
#include "accel/host/reference_ops.h"

namespace tessera::host {
namespace {

template <class F>
Tensor map_in_place(Tensor x, F f) {
  float* p = x.ptr();
  parallel_for(x.elements(), 4, kSplitElements, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) p[i] = f(p[i]);
  });
  return x;
}

float hard_sigmoid_value(float v, float alpha, float beta) { return std::clamp(alpha * v + beta, 0.0f, 1.0f); }

}  // namespace

Result<Tensor> sigmoid(Tensor x) {
  return map_in_place(std::move(x), [](float v) { return 1.0f / (1.0f + std::exp(-v)); });
}

Result<Tensor> hard_sigmoid(Tensor x, const HardSigmoidAttrs& attrs) {
  return map_in_place(std::move(x), [a = attrs.alpha, b = attrs.beta](float v) { return hard_sigmoid_value(v, a, b); });
}

Result<Tensor> hard_swish(Tensor x) {
  return map_in_place(std::move(x), [](float v) { return v * std::clamp(v + 3.0f, 0.0f, 6.0f) / 6.0f; });
}

Result<Tensor> square_root(Tensor x) {
  return map_in_place(std::move(x), [](float v) { return std::sqrt(v); });
}

Result<Tensor> erf(Tensor x) {
  return map_in_place(std::move(x), [](float v) { return std::erf(v); });
}

Result<Tensor> gelu(Tensor x) {
  constexpr float kRsqrt2 = 0.70710678118654752f;
  return map_in_place(std::move(x), [](float v) { return 0.5f * v * (1.0f + std::erf(v * kRsqrt2)); });
}

}  // namespace tessera::host
