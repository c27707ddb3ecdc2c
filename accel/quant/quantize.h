// int8 quantisation arithmetic: symmetric per-output-channel weights, per-tensor activations,
// and the (multiplier, shift) pairs of the requantisation rule in kernels/kernel_abi.h.
#pragma once

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

// round(x / scale) clamped to [-128, 127].
int8_t quantize_value(float x, float scale);

// Per output channel (dim 0) symmetric int8 weights: values[c][...] = round(w / scales[c]),
// clamped to [-127, 127].
struct ChannelQuantized {
  std::vector<int8_t> values;
  std::vector<float> scales;
};
ChannelQuantized quantize_per_channel(const Tensor& weights);

}  // namespace tessera::quant
