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

Result<Image> decode_jpeg(std::span<const uint8_t> bytes, int want_channels, const DecodeLimits& limits);
Result<Image> decode_png(std::span<const uint8_t> bytes, int want_channels, const DecodeLimits& limits);

}  // namespace tessera::image_internal
