// JPEG and PNG: the magic-byte sniff, the header check and the decode (accel/image), as
// /v1/classify and KServe's BYTES input reach them. The first byte picks 1 or 3 channels; the
// limits are small so that a header claiming a huge image is refused rather than decoded.
#include <cstddef>
#include <cstdint>
#include <span>

#include "accel/image/image.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int want_channels = (data[0] & 1) ? 3 : 1;
  const std::span<const uint8_t> bytes(data + 1, size - 1);
  tessera::DecodeLimits limits;
  limits.max_pixels = 4'000'000;
  limits.max_side = 4096;
  (void)tessera::detect_image_format(bytes);
  auto image = tessera::decode_image(bytes, want_channels, limits);
  if (image.is_ok()) {
    const auto& img = image.value();
    const size_t expected = static_cast<size_t>(img.width) * img.height * img.channels;
    if (img.channels != want_channels || img.pixels.size() != expected) __builtin_trap();
  }
  return 0;
}
