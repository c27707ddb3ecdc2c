// Pixel conversions shared by the decoders and preprocessing (internal to accel/image).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera::image_internal {

// ITU-R BT.601 luma, rounded half up: (299 R + 587 G + 114 B + 500) / 1000. Exact for gray
// pixels (R = G = B = v gives v).
inline uint8_t rgb_to_luma(uint8_t r, uint8_t g, uint8_t b) {
  return static_cast<uint8_t>((299u * r + 587u * g + 114u * b + 500u) / 1000u);
}

// Composites one 8-bit channel value with alpha `a` onto a white background, rounded.
inline uint8_t over_white(uint8_t value, uint8_t a) {
  return static_cast<uint8_t>((value * a + 255u * (255u - a) + 127u) / 255u);
}

// Converts `count` interleaved pixels with `from` channels to `to` channels. `from` may be
// 1 (gray), 3 (RGB) or 4 (RGBA, composited onto white); `to` is 1 or 3. `src` and `dst` must
// not overlap.
void convert_pixels(const uint8_t* src, int from, uint8_t* dst, int to, size_t count);

}  // namespace tessera::image_internal
