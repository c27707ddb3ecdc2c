#include "accel/quant/quantize.h"

#include <algorithm>
#include <cmath>

#include "kernels/kernel_abi.h"

namespace tessera::quant {

FixedMultiplier quantize_multiplier(double real) {
  if (!(real > 0)) return {0, abi::kMinShift};
  int exponent = 0;
  const double fraction = std::frexp(real, &exponent);  // real = fraction * 2^exponent, fraction in [0.5, 1)
  auto multiplier = static_cast<int64_t>(std::llround(fraction * (1ll << 31)));
  if (multiplier == (1ll << 31)) {
    multiplier /= 2;
    ++exponent;
  }
  int shift = 31 - exponent;
  if (shift < abi::kMinShift) {
    // real >= 2^30: saturating multiplier; such layers clamp anyway.
    return {INT32_MAX, abi::kMinShift};
  }
  if (shift > abi::kMaxShift) {
    // Shift the excess into the multiplier (losing precision) until it fits. An excess of 63 or
    // more leaves nothing (and a shift by >= 64 is undefined: x86 and ARM shift by excess mod 64,
    // which made 1e-30 a multiplier of 2^27; UBSan, issue 15).
    const int excess = shift - abi::kMaxShift;
    multiplier = excess >= 63 ? 0 : multiplier >> excess;
    shift = abi::kMaxShift;
  }
  return {static_cast<int32_t>(multiplier), shift};
}

float scale_for_range(float range) { return range > 0 ? range / 127.0f : 1.0f; }

int8_t quantize_value(float x, float scale) {
  const float q = std::nearbyint(x / scale);
  return static_cast<int8_t>(std::clamp(q, -128.0f, 127.0f));
}

ChannelQuantized quantize_per_channel(const Tensor& weights) {
  ChannelQuantized out;
  const int64_t channels = weights.dim(0);
  const int64_t per_channel = weights.elements() / channels;
  out.values.resize(static_cast<size_t>(weights.elements()));
  out.scales.resize(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    const float* w = weights.ptr() + c * per_channel;
    float max_abs = 0;
    for (int64_t i = 0; i < per_channel; ++i) max_abs = std::max(max_abs, std::fabs(w[i]));
    const float scale = scale_for_range(max_abs);
    out.scales[static_cast<size_t>(c)] = scale;
    for (int64_t i = 0; i < per_channel; ++i) {
      const float q = std::clamp(std::nearbyint(w[i] / scale), -127.0f, 127.0f);
      out.values[static_cast<size_t>(c * per_channel + i)] = static_cast<int8_t>(q);
    }
  }
  return out;
}

}  // namespace tessera::quant
