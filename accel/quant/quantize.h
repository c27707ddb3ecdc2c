// int8 quantisation arithmetic: symmetric per-output-channel weights, per-tensor activations,
// and the (multiplier, shift) pairs of the requantisation rule in kernels/kernel_abi.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "accel/graph/tensor.h"

namespace tessera::quant {

// real ~= multiplier * 2^-shift with multiplier in [2^30, 2^31) and shift in the ABI's range;
// reals too small for the range round to the smallest representable value (or to 0).
struct FixedMultiplier {
  int32_t multiplier = 0;
  int32_t shift = 1;
};
FixedMultiplier quantize_multiplier(double real);

// The scale that maps [-range, range] onto [-127, 127] (1 for an all-zero range).
float scale_for_range(float range);

// round(x / scale) clamped to [-128, 127]: x / scale rounded to nearest under the current
// rounding mode (nearbyint: half to even by default); NaN gives 0 (what the float-to-int
// conversion of the clamped NaN gave on x86 and ARM before it was spelled out).
int8_t quantize_value(float x, float scale);

// Implementations of quantize_values: the same bytes as quantize_value, element by element.
enum class QuantizePath : uint8_t { kScalar, kAvx2, kAvx512 };
// Whether this build and CPU can run `path` (kScalar always).
bool quantize_path_available(QuantizePath path);
// out[i] = quantize_value(x[i], scale) for i < n, on `path` (which must be available).
void quantize_values_on(QuantizePath path, const float* x, size_t n, float scale, int8_t* out);
// out[i] = quantize_value(x[i], scale) for i < n, on the fastest path this CPU has (the engine's
// input quantisation: one division, rounding and clamp per element, 16 at a time on AVX-512).
void quantize_values(const float* x, size_t n, float scale, int8_t* out);

// Per output channel (dim 0) symmetric int8 weights: values[c][...] = round(w / scales[c]),
// clamped to [-127, 127].
struct ChannelQuantized {
  std::vector<int8_t> values;
  std::vector<float> scales;
};
ChannelQuantized quantize_per_channel(const Tensor& weights);

}  // namespace tessera::quant
