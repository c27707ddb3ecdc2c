// Decoded images and the decoder: JPEG (libjpeg-turbo) and PNG (libspng) only. Dimensions are
// read from the header and checked against the limits before any pixel is decoded.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "accel/common/status.h"

namespace tessera {

// 8-bit interleaved pixels, row-major; channels is 1 (gray) or 3 (RGB).
struct Image {
  int width = 0;
  int height = 0;
  int channels = 0;
  std::vector<uint8_t> pixels;
};

struct DecodeLimits {
  int64_t max_bytes = 32 << 20;     // encoded size
  int64_t max_pixels = 40'000'000;  // width * height
  int max_side = 16384;             // width and height each
  // What the model's resize needs (its input width x height); 0: unknown, decode at full size.
  // Given, a JPEG is decoded at the smallest DCT scale (1/8, 1/4, 1/2, 1) still at least this big on
  // both sides, and a PNG (which has no scaled decode) far above it must be plausibly sized for
  // its bytes: see the next two limits.
  int target_width = 0;
  int target_height = 0;
  // A PNG of more than max_pixel_ratio x the target's pixels is refused when it also holds more
  // than max_png_pixels_per_byte pixels per encoded byte: its decode would cost far more than
  // both what the model needs and what the sender paid in bytes (a 116 KB PNG of 16384x2441).
  double max_pixel_ratio = 1024;
  double max_png_pixels_per_byte = 32;
};

enum class ImageFormat { kUnknown, kJpeg, kPng };

// Sniffs the magic bytes.
ImageFormat detect_image_format(std::span<const uint8_t> bytes);

// Decodes to `want_channels` (1 or 3) channels. INVALID_ARGUMENT with a message saying why for
// an empty, truncated, corrupt, unsupported (not JPEG/PNG) or oversized image.
Result<Image> decode_image(std::span<const uint8_t> bytes, int want_channels, const DecodeLimits& limits = {});

}  // namespace tessera
