#include "accel/image/resample.h"

#include <algorithm>
#include <cmath>

namespace tessera::image_internal {
namespace {

// Same length at an integral start: the axis is a copy (weight 1).
bool axis_is_copy(double start, double length, int out_length) {
  return length / out_length == 1.0 && start == std::floor(start);
}

// Both axes copies: each output is the source pixel as a float, which is what the weighted passes
// give (0 + 1.0f * s, exact), without their weight tables and row buffer. A 224x224 JPEG served
// to a 224x224 model took this path's weighted form for ~4% of tesserad's CPU (ResNet-18,
// concurrency 16, perf).
void copy_region(const uint8_t* pixels, int width, int channels, const SourceRegion& region, int out_width,
                 int out_height, float* out, size_t row_pitch, size_t plane_pitch) {
  const auto stride = static_cast<size_t>(channels);
  const auto x0 = static_cast<size_t>(region.x);
  const auto y0 = static_cast<size_t>(region.y);
  for (int c = 0; c < channels; ++c) {
    for (size_t y = 0; y < static_cast<size_t>(out_height); ++y) {
      const uint8_t* src = pixels + ((y0 + y) * static_cast<size_t>(width) + x0) * stride + static_cast<size_t>(c);
      float* dst = out + static_cast<size_t>(c) * plane_pitch + y * row_pitch;
      for (size_t i = 0; i < static_cast<size_t>(out_width); ++i) dst[i] = src[i * stride];
    }
  }
}

}  // namespace

AxisWeights axis_weights(int source_length, double start, double length, int out_length) {
  AxisWeights axis;
  const auto n = static_cast<size_t>(out_length);
  const double ratio = length / out_length;
  const bool copy = axis_is_copy(start, length, out_length);
  axis.taps = copy ? 1 : ratio <= 2.0 ? 2 : static_cast<int>(std::ceil(ratio)) + 1;
  axis.first.resize(n);
  axis.count.resize(n);
  axis.weight.assign(n * static_cast<size_t>(axis.taps), 0.0f);
  for (size_t i = 0; i < n; ++i) {
    float* w = axis.weight.data() + i * static_cast<size_t>(axis.taps);
    const double di = static_cast<double>(i);
    if (copy) {
      axis.first[i] = static_cast<int>(start) + static_cast<int>(i);
      axis.count[i] = 1;
      w[0] = 1.0f;
    } else if (ratio <= 2.0) {
      const double centre = std::clamp(start + (di + 0.5) * ratio - 0.5, 0.0, source_length - 1.0);
      const int i0 = static_cast<int>(std::floor(centre));
      const double frac = centre - i0;
      axis.first[i] = i0;
      if (frac == 0.0 || i0 + 1 >= source_length) {
        axis.count[i] = 1;
        w[0] = 1.0f;
      } else {
        axis.count[i] = 2;
        w[0] = static_cast<float>(1.0 - frac);
        w[1] = static_cast<float>(frac);
      }
    } else {
      const double a = std::clamp(start + di * ratio, 0.0, static_cast<double>(source_length));
      const double b = std::clamp(start + (di + 1.0) * ratio, a, static_cast<double>(source_length));
      const int j0 = std::min(static_cast<int>(std::floor(a)), source_length - 1);
      const int j1 = std::max(static_cast<int>(std::ceil(b)), j0 + 1);
      axis.first[i] = j0;
      axis.count[i] = std::min(j1 - j0, axis.taps);
      for (int k = 0; k < axis.count[i]; ++k) {
        const double overlap = std::min(b, j0 + k + 1.0) - std::max(a, j0 + k + 0.0);
        w[k] = b > a ? static_cast<float>(std::max(overlap, 0.0) / (b - a)) : (k == 0 ? 1.0f : 0.0f);
      }
    }
  }
  return axis;
}

void resample(const uint8_t* pixels, int width, int height, int channels, const SourceRegion& region, int out_width,
              int out_height, float* out, size_t row_pitch, size_t plane_pitch) {
  if (axis_is_copy(region.x, region.width, out_width) && axis_is_copy(region.y, region.height, out_height)) {
    copy_region(pixels, width, channels, region, out_width, out_height, out, row_pitch, plane_pitch);
    return;
  }
  const AxisWeights xs = axis_weights(width, region.x, region.width, out_width);
  const AxisWeights ys = axis_weights(height, region.y, region.height, out_height);
  // Only the source rows some output row reads go through the horizontal pass.
  int row_begin = height;
  int row_end = 0;
  for (int j = 0; j < out_height; ++j) {
    row_begin = std::min(row_begin, ys.first[static_cast<size_t>(j)]);
    row_end = std::max(row_end, ys.first[static_cast<size_t>(j)] + ys.count[static_cast<size_t>(j)]);
  }
  const auto ow = static_cast<size_t>(out_width);
  const auto stride = static_cast<size_t>(channels);
  std::vector<float> rows(static_cast<size_t>(row_end - row_begin) * ow);
  for (int c = 0; c < channels; ++c) {
    for (int y = row_begin; y < row_end; ++y) {
      const uint8_t* src =
          pixels + static_cast<size_t>(y) * static_cast<size_t>(width) * stride + static_cast<size_t>(c);
      float* dst = rows.data() + static_cast<size_t>(y - row_begin) * ow;
      for (size_t i = 0; i < ow; ++i) {
        const float* w = xs.weight.data() + i * static_cast<size_t>(xs.taps);
        const uint8_t* s = src + static_cast<size_t>(xs.first[i]) * stride;
        float sum = 0.0f;
        for (int k = 0; k < xs.count[i]; ++k) sum += w[k] * s[static_cast<size_t>(k) * stride];
        dst[i] = sum;
      }
    }
    float* plane = out + static_cast<size_t>(c) * plane_pitch;
    for (size_t j = 0; j < static_cast<size_t>(out_height); ++j) {
      const float* w = ys.weight.data() + j * static_cast<size_t>(ys.taps);
      const float* src = rows.data() + static_cast<size_t>(ys.first[j] - row_begin) * ow;
      float* dst = plane + j * row_pitch;
      for (size_t i = 0; i < ow; ++i) {
        float sum = 0.0f;
        for (int k = 0; k < ys.count[j]; ++k) sum += w[k] * src[static_cast<size_t>(k) * ow + i];
        dst[i] = sum;
      }
    }
  }
}

}  // namespace tessera::image_internal
