// The per-format decoders behind decode_image (internal to accel/image). decode_image has
// already checked that the data is non-empty, within max_bytes and of the right format, and
// that want_channels is 1 or 3.
#pragma once

#include <cstdint>
#include <span>

#include "accel/common/status.h"
#include "accel/image/image.h"

namespace tessera::image_internal {

// INVALID_ARGUMENT when header dimensions are zero or exceed max_side / max_pixels; `format`
// ("JPEG", "PNG") starts the message.
Status check_dimensions(const char* format, int64_t width, int64_t height, const DecodeLimits& limits);

// INVALID_ARGUMENT when a PNG's header dimensions are far above the limits' target and
// implausibly many for its `encoded_bytes` (DecodeLimits::max_pixel_ratio, max_png_pixels_per_byte).
Status check_png_cost(int64_t width, int64_t height, size_t encoded_bytes, const DecodeLimits& limits);

// The JPEG DCT scale (1/2, 1/4 or 1/8 of tjGetScalingFactors) giving the smallest decode still at
// least limits.target_width x target_height; 1/1 without a target or when none is smaller.
struct JpegScale {
  int num = 1;
  int denom = 1;
};
JpegScale jpeg_scale_for(int width, int height, const DecodeLimits& limits);

Result<Image> decode_jpeg(std::span<const uint8_t> bytes, int want_channels, const DecodeLimits& limits);
Result<Image> decode_png(std::span<const uint8_t> bytes, int want_channels, const DecodeLimits& limits);

}  // namespace tessera::image_internal
