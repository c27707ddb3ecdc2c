// Preprocessing: decoded image -> the model's float input (resize, optional inversion,
// scale, per-channel mean/std), as the model's model.toml [input] table declares.
#pragma once

#include <vector>

#include "accel/common/status.h"
#include "accel/graph/tensor.h"
#include "accel/image/image.h"

namespace tessera {

enum class InvertMode { kNo, kYes, kAuto };
enum class ResizeMode { kStretch, kFit, kCenterCrop };

struct PreprocessConfig {
  int width = 0;
  int height = 0;
  int channels = 1;         // 1 = grayscale, 3 = RGB
  float scale = 255.0f;     // x = pixel / scale
  std::vector<float> mean;  // one per channel: x = (x - mean) / std
  std::vector<float> std;
  InvertMode invert = InvertMode::kNo;  // kAuto: invert when the border ring is brighter than the whole image
  ResizeMode resize = ResizeMode::kStretch;
  bool bgr = false;  // 3 channels in B, G, R order (Caffe models) instead of R, G, B
  // Caffe's mean.binaryproto: channels x height x width values in pixel units (0-255), in the
  // model's channel order, subtracted before the scale: x = (pixel - mean_image) / scale. Empty:
  // none.
  std::vector<float> mean_image;
};

// Writes the preprocessed image as C x H x W floats into `out` (size channels*height*width),
// so a caller can fill one slot of a batch tensor in place.
Status preprocess_into(const Image& image, const PreprocessConfig& config, float* out);

// Convenience: a 1 x C x H x W tensor.
Result<Tensor> preprocess(const Image& image, const PreprocessConfig& config);

}  // namespace tessera
