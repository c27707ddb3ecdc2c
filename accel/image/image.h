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
};

enum class ImageFormat { kUnknown, kJpeg, kPng };

// Sniffs the magic bytes.
ImageFormat detect_image_format(std::span<const uint8_t> bytes);

// Decodes to `want_channels` (1 or 3) channels. INVALID_ARGUMENT with a message saying why for
// an empty, truncated, corrupt, unsupported (not JPEG/PNG) or oversized image.
Result<Image> decode_image(std::span<const uint8_t> bytes, int want_channels, const DecodeLimits& limits = {});

}  // namespace tessera
