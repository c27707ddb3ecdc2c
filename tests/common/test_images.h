// Images encoded in the tests (spng, TurboJPEG) and the byte surgery that makes bad ones: a PNG
// or JPEG whose header declares other dimensions (decompression bombs). Shared by the image unit
// tests and the bad-input catalogue (tests/integration/security/).
#pragma once

#include <gtest/gtest.h>
#include <spng.h>
#include <turbojpeg.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace tessera::test_images {

using Bytes = std::vector<uint8_t>;

// The bytes as a string (an HTTP body).
inline std::string as_string(const Bytes& bytes) { return {bytes.begin(), bytes.end()}; }

// Encodes samples laid out as the PNG stores them (16-bit samples in host order).
inline Bytes encode_png(uint32_t width, uint32_t height, uint8_t bit_depth, uint8_t color_type, const void* samples,
                        size_t size, bool interlaced = false, spng_plte* plte = nullptr, spng_trns* trns = nullptr) {
  spng_ctx* ctx = spng_ctx_new(SPNG_CTX_ENCODER);
  spng_set_option(ctx, SPNG_ENCODE_TO_BUFFER, 1);
  spng_ihdr ihdr{};
  ihdr.width = width;
  ihdr.height = height;
  ihdr.bit_depth = bit_depth;
  ihdr.color_type = color_type;
  ihdr.interlace_method = interlaced ? SPNG_INTERLACE_ADAM7 : SPNG_INTERLACE_NONE;
  int error = spng_set_ihdr(ctx, &ihdr);
  if (error == 0 && plte) error = spng_set_plte(ctx, plte);
  if (error == 0 && trns) error = spng_set_trns(ctx, trns);
  if (error == 0) error = spng_encode_image(ctx, samples, size, SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE);
  size_t length = 0;
  void* buffer = error == 0 ? spng_get_png_buffer(ctx, &length, &error) : nullptr;
  spng_ctx_free(ctx);
  EXPECT_EQ(error, 0) << spng_strerror(error);
  Bytes png(static_cast<uint8_t*>(buffer), static_cast<uint8_t*>(buffer) + length);
  std::free(buffer);
  return png;
}

inline Bytes encode_png(uint32_t width, uint32_t height, uint8_t bit_depth, uint8_t color_type, const Bytes& samples) {
  return encode_png(width, height, bit_depth, color_type, samples.data(), samples.size());
}

inline Bytes encode_jpeg(int width, int height, int pixel_format, const Bytes& pixels, int subsampling, int flags = 0,
                         int quality = 100) {
  tjhandle tj = tjInitCompress();
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  const int error =
      tjCompress2(tj, pixels.data(), width, 0, height, pixel_format, &buffer, &size, subsampling, quality, flags);
  EXPECT_EQ(error, 0) << tjGetErrorStr2(tj);
  Bytes jpeg(buffer, buffer + size);
  tjFree(buffer);
  tjDestroy(tj);
  return jpeg;
}

inline uint32_t crc32(const uint8_t* data, size_t n) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    crc ^= data[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

inline void put_be32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}

// Rewrites the IHDR's dimensions (with a valid CRC) of a PNG.
inline Bytes with_png_size(Bytes png, uint32_t width, uint32_t height) {
  put_be32(&png[16], width);
  put_be32(&png[20], height);
  put_be32(&png[29], crc32(&png[12], 17));  // over "IHDR" + 13 data bytes
  return png;
}

// Rewrites the SOF0 dimensions of a baseline JPEG.
inline Bytes with_jpeg_size(Bytes jpeg, uint16_t width, uint16_t height) {
  for (size_t i = 2; i + 9 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xC0) {
      jpeg[i + 5] = static_cast<uint8_t>(height >> 8);
      jpeg[i + 6] = static_cast<uint8_t>(height);
      jpeg[i + 7] = static_cast<uint8_t>(width >> 8);
      jpeg[i + 8] = static_cast<uint8_t>(width);
      return jpeg;
    }
  }
  ADD_FAILURE() << "no SOF0 marker";
  return jpeg;
}

}  // namespace tessera::test_images
