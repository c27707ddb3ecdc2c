#include "accel/image/pixel_convert.h"

#include <cstring>

namespace tessera::image_internal {

void convert_pixels(const uint8_t* src, int from, uint8_t* dst, int to, size_t count) {
  if (from == to) {
    std::memcpy(dst, src, count * static_cast<size_t>(to));
    return;
  }
  for (size_t i = 0; i < count; ++i, src += from) {
    uint8_t r = src[0];
    uint8_t g = from == 1 ? src[0] : src[1];
    uint8_t b = from == 1 ? src[0] : src[2];
    if (from == 4) {
      r = over_white(r, src[3]);
      g = over_white(g, src[3]);
      b = over_white(b, src[3]);
    }
    if (to == 1) {
      *dst++ = rgb_to_luma(r, g, b);
    } else {
      *dst++ = r;
      *dst++ = g;
      *dst++ = b;
    }
  }
}

}  // namespace tessera::image_internal
