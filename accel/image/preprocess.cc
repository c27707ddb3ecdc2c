#include "accel/image/preprocess.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "accel/image/pixel_convert.h"
#include "accel/image/resample.h"

namespace tessera {
namespace {

using image_internal::SourceRegion;

Status check_per_channel(const std::vector<float>& values, const char* name, int channels) {
  const size_t n = values.size();
  if (n != 0 && n != 1 && n != static_cast<size_t>(channels)) {
    return Status::invalid_argument("preprocess: " + std::string(name) + " has " + std::to_string(n) +
                                    " values; want 1 or " + std::to_string(channels));
  }
  for (float v : values) {
    if (!std::isfinite(v)) return Status::invalid_argument("preprocess: " + std::string(name) + " is not finite");
  }
  return Status::ok();
}

Status validate(const Image& image, const PreprocessConfig& config) {
  if (config.width <= 0 || config.height <= 0) {
    return Status::invalid_argument("preprocess: target size " + std::to_string(config.width) + "x" +
                                    std::to_string(config.height) + " must be positive");
  }
  if (config.channels != 1 && config.channels != 3) {
    return Status::invalid_argument("preprocess: channels must be 1 or 3, got " + std::to_string(config.channels));
  }
  if (!std::isfinite(config.scale) || config.scale <= 0.0f) {
    return Status::invalid_argument("preprocess: scale must be positive");
  }
  TESSERA_RETURN_IF_ERROR(check_per_channel(config.mean, "mean", config.channels));
  TESSERA_RETURN_IF_ERROR(check_per_channel(config.std, "std", config.channels));
  if (!config.mean_image.empty() && config.mean_image.size() != static_cast<size_t>(config.channels) *
                                                                    static_cast<size_t>(config.width) *
                                                                    static_cast<size_t>(config.height)) {
    return Status::invalid_argument("preprocess: the mean image has " + std::to_string(config.mean_image.size()) +
                                    " values; want channels x height x width");
  }
  if (config.bgr && config.channels != 3) {
    return Status::invalid_argument("preprocess: BGR channel order needs 3 channels");
  }
  if (std::find(config.std.begin(), config.std.end(), 0.0f) != config.std.end()) {
    return Status::invalid_argument("preprocess: std must not be 0");
  }
  if (image.width <= 0 || image.height <= 0 || (image.channels != 1 && image.channels != 3) ||
      image.pixels.size() !=
          static_cast<size_t>(image.width) * static_cast<size_t>(image.height) * static_cast<size_t>(image.channels)) {
    return Status::invalid_argument("preprocess: malformed image " + std::to_string(image.width) + "x" +
                                    std::to_string(image.height) + "x" + std::to_string(image.channels) + " with " +
                                    std::to_string(image.pixels.size()) + " bytes");
  }
  return Status::ok();
}

// Per-channel value of a mean/std list: empty means `fallback`, one value serves all channels.
float per_channel(const std::vector<float>& values, int c, float fallback) {
  if (values.empty()) return fallback;
  return values.size() == 1 ? values[0] : values[static_cast<size_t>(c)];
}

// Sums over the 1-pixel border ring and over the whole image, per channel.
struct Brightness {
  std::array<double, 3> border_sum{};
  std::array<double, 3> total_sum{};
  double border_pixels = 0;
  double total_pixels = 0;
};

Brightness measure(const uint8_t* pixels, int width, int height, int channels) {
  Brightness b;
  const auto w = static_cast<size_t>(width);
  const auto ch = static_cast<size_t>(channels);
  for (size_t y = 0; y < static_cast<size_t>(height); ++y) {
    const bool edge_row = y == 0 || y + 1 == static_cast<size_t>(height);
    for (size_t x = 0; x < w; ++x) {
      const bool border = edge_row || x == 0 || x + 1 == w;
      const uint8_t* p = pixels + (y * w + x) * ch;
      for (size_t c = 0; c < ch; ++c) {
        b.total_sum[c] += p[c];
        if (border) b.border_sum[c] += p[c];
      }
      b.border_pixels += border ? 1 : 0;
    }
  }
  b.total_pixels = static_cast<double>(width) * height;
  return b;
}

// (2) Inversion. kAuto inverts dark-on-light pictures (the border ring is brighter than the
// image as a whole) into the light-on-dark look of Fashion-MNIST. The background (padding for
// kFit) is the border ring's mean, after inversion.
struct Inversion {
  bool invert = false;
  std::array<float, 3> background{};
};

Inversion decide_inversion(const uint8_t* pixels, int width, int height, int channels, InvertMode mode) {
  const Brightness b = measure(pixels, width, height, channels);
  double border_mean = 0, total_mean = 0;
  for (int c = 0; c < channels; ++c) {
    border_mean += b.border_sum[static_cast<size_t>(c)];
    total_mean += b.total_sum[static_cast<size_t>(c)];
  }
  border_mean /= b.border_pixels * channels;
  total_mean /= b.total_pixels * channels;
  Inversion inversion;
  inversion.invert = mode == InvertMode::kYes || (mode == InvertMode::kAuto && border_mean > total_mean);
  for (int c = 0; c < channels; ++c) {
    const double mean = b.border_sum[static_cast<size_t>(c)] / b.border_pixels;
    inversion.background[static_cast<size_t>(c)] = static_cast<float>(inversion.invert ? 255.0 - mean : mean);
  }
  return inversion;
}

// (3) Geometry: which source region lands in which output rectangle.
struct Placement {
  SourceRegion region;
  int64_t dst_x = 0, dst_y = 0, dst_w = 0, dst_h = 0;
};

Placement place(int64_t w, int64_t h, int64_t tw, int64_t th, ResizeMode resize) {
  Placement p{SourceRegion{0, 0, static_cast<double>(w), static_cast<double>(h)}, 0, 0, tw, th};
  SourceRegion& region = p.region;
  if (resize == ResizeMode::kFit) {
    const double s = std::min(static_cast<double>(tw) / w, static_cast<double>(th) / h);
    p.dst_w = std::clamp<int64_t>(std::llround(w * s), 1, tw);
    p.dst_h = std::clamp<int64_t>(std::llround(h * s), 1, th);
    p.dst_x = (tw - p.dst_w) / 2;
    p.dst_y = (th - p.dst_h) / 2;
  } else if (resize == ResizeMode::kCenterCrop) {
    // The centred region with the target's aspect ratio; a pure crop stays on whole pixels.
    if (w * th > tw * h) {
      region.width = static_cast<double>(h) * tw / th;
      // NOLINTNEXTLINE(bugprone-integer-division): a pure crop starts on a whole pixel
      region.x = region.width == tw ? static_cast<double>((w - tw) / 2) : (w - region.width) / 2;
    } else if (w * th < tw * h) {
      region.height = static_cast<double>(w) * th / tw;
      // NOLINTNEXTLINE(bugprone-integer-division): a pure crop starts on a whole pixel
      region.y = region.height == th ? static_cast<double>((h - th) / 2) : (h - region.height) / 2;
    }
  }
  return p;
}

// (5) x = (pixel - mean_image) / scale, then (x - mean) / std, on each of the planes at `out`.
void normalize_planes(float* out, size_t plane, const PreprocessConfig& config) {
  for (int c = 0; c < config.channels; ++c) {
    const float mean = per_channel(config.mean, c, 0.0f);
    const float deviation = per_channel(config.std, c, 1.0f);
    float* p = out + static_cast<size_t>(c) * plane;
    if (!config.mean_image.empty()) {
      const float* m = config.mean_image.data() + static_cast<size_t>(c) * plane;
      for (size_t i = 0; i < plane; ++i) p[i] -= m[i];
    }
    for (size_t i = 0; i < plane; ++i) p[i] = (p[i] / config.scale - mean) / deviation;
  }
}

}  // namespace

Status preprocess_into(const Image& image, const PreprocessConfig& config, float* out) {
  if (out == nullptr) return Status::invalid_argument("preprocess: null output");
  TESSERA_RETURN_IF_ERROR(validate(image, config));
  const int channels = config.channels;
  const auto count = static_cast<size_t>(image.width) * static_cast<size_t>(image.height);

  // (1) Channels: BT.601 luma for RGB -> gray, replication for gray -> RGB.
  std::vector<uint8_t> converted;
  const uint8_t* pixels = image.pixels.data();
  if (image.channels != channels) {
    converted.resize(count * static_cast<size_t>(channels));
    image_internal::convert_pixels(pixels, image.channels, converted.data(), channels, count);
    pixels = converted.data();
  }

  // (2) Inversion.
  const Inversion inversion = decide_inversion(pixels, image.width, image.height, channels, config.invert);
  if (inversion.invert) {
    if (converted.empty()) converted.assign(image.pixels.begin(), image.pixels.end());
    for (uint8_t& p : converted) p = static_cast<uint8_t>(255 - p);
    pixels = converted.data();
  }

  // (3) Geometry, and the background around a fitted image.
  const int64_t tw = config.width, th = config.height;
  const Placement at = place(image.width, image.height, tw, th, config.resize);
  const auto plane = static_cast<size_t>(tw * th);
  if (at.dst_w != tw || at.dst_h != th) {
    for (int c = 0; c < channels; ++c) {
      std::fill(out + static_cast<size_t>(c) * plane, out + static_cast<size_t>(c + 1) * plane,
                inversion.background[static_cast<size_t>(c)]);
    }
  }
  image_internal::resample(pixels, image.width, image.height, channels, at.region, static_cast<int>(at.dst_w),
                           static_cast<int>(at.dst_h), out + static_cast<size_t>(at.dst_y * tw + at.dst_x),
                           static_cast<size_t>(tw), plane);

  // (4) Channel order: the planes are R, G, B; Caffe models want B, G, R.
  if (config.bgr) std::swap_ranges(out, out + plane, out + 2 * plane);

  // (5) Normalisation.
  normalize_planes(out, plane, config);
  return Status::ok();
}

Result<Tensor> preprocess(const Image& image, const PreprocessConfig& config) {
  TESSERA_RETURN_IF_ERROR(validate(image, config));
  Tensor tensor(Shape{1, config.channels, config.height, config.width});
  TESSERA_RETURN_IF_ERROR(preprocess_into(image, config, tensor.ptr()));
  return tensor;
}

}  // namespace tessera
