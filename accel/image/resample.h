// Separable resampling of 8-bit interleaved images into float planes (internal to
// accel/image; preprocess.cc is the caller).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessera::image_internal {

// A source rectangle in continuous pixel coordinates: pixel i covers [i, i + 1).
struct SourceRegion {
  double x = 0;
  double y = 0;
  double width = 0;
  double height = 0;
};

// Weights along one axis: output i = sum over k < count[i] of weight[i * taps + k] *
// source[first[i] + k].
struct AxisWeights {
  int taps = 0;
  std::vector<int> first;
  std::vector<int> count;
  std::vector<float> weight;
};

// Maps [start, start + length) of a source axis of `source_length` pixels onto `out_length`
// pixels. Same length at an integral start: a copy (weight 1). Growing or shrinking by at
// most 2x: bilinear with half-pixel centres, edge pixels repeated. Shrinking by more: area
// averaging (each output pixel is the mean of the source span it covers), so thin detail
// does not alias.
AxisWeights axis_weights(int source_length, double start, double length, int out_length);

// Resamples `region` of every channel of `pixels` (width x height x channels, interleaved)
// to out_width x out_height. Channel c's output pixel (x, y) goes to
// out[c * plane_pitch + y * row_pitch + x].
void resample(const uint8_t* pixels, int width, int height, int channels, const SourceRegion& region, int out_width,
              int out_height, float* out, size_t row_pitch, size_t plane_pitch);

}  // namespace tessera::image_internal
