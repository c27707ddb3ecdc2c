// Issue 24, item 9: the decode cost is bounded by what the model needs. Given the model's input
// size, a JPEG is decoded DCT-scaled to the smallest size still covering it, and a PNG far larger
// than it (no scaled decode exists) is refused when it is also implausibly dense for its bytes.
#include <gtest/gtest.h>
#include <spng.h>
#include <turbojpeg.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "accel/image/image.h"
#include "tests/common/test_images.h"

namespace tessera {
namespace {

using namespace test_images;  // NOLINT(google-build-using-namespace)

DecodeLimits for_model(int width, int height) {
  DecodeLimits limits;
  limits.target_width = width;
  limits.target_height = height;
  return limits;
}

Bytes noise(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  Bytes out(n);
  for (auto& b : out) b = static_cast<uint8_t>(rng());
  return out;
}

TEST(ImageDecodeCost, AFlatPngFarLargerThanTheModelIsRefusedSayingTheLimit) {
  // 4096x1024 black: 4 M pixels from a few KB, 5350 times a 28x28 input.
  const Bytes png = encode_png(4096, 1024, 8, SPNG_COLOR_TYPE_GRAYSCALE, Bytes(size_t{4096} * 1024, 0));
  ASSERT_LT(png.size(), 64u << 10);
  const Result<Image> refused = decode_image(png, 1, for_model(28, 28));
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  const std::string message = refused.status().message();
  EXPECT_NE(message.find("PNG image is 4096x1024 (5350 times the model's 28x28 input"), std::string::npos) << message;
  EXPECT_NE(message.find("over 1024 times the input, a PNG may hold at most 32 pixels per byte"), std::string::npos)
      << message;
  // Without a model to size it for (tessera eval, calibration) and within a raised limit it decodes.
  EXPECT_TRUE(decode_image(png, 1).is_ok());
  DecodeLimits raised = for_model(28, 28);
  raised.max_png_pixels_per_byte = 1e6;
  EXPECT_TRUE(decode_image(png, 1, raised).is_ok());
}

TEST(ImageDecodeCost, LargePngsThatAreNotDenseOrNotFarLargerDecode) {
  // Noise: about one byte per pixel, however far above the input; the sender paid for it.
  const Bytes dense_noise = encode_png(1024, 1024, 8, SPNG_COLOR_TYPE_GRAYSCALE, noise(size_t{1024} * 1024, 7));
  const Result<Image> photo_like = decode_image(dense_noise, 1, for_model(28, 28));
  ASSERT_TRUE(photo_like.is_ok()) << photo_like.status().to_string();
  EXPECT_EQ(photo_like->width, 1024);
  // Flat but within 1024 times the input (800x800 = 816 x 28x28).
  const Bytes flat = encode_png(800, 800, 8, SPNG_COLOR_TYPE_GRAYSCALE, Bytes(size_t{800} * 800, 255));
  EXPECT_TRUE(decode_image(flat, 1, for_model(28, 28)).is_ok());
}

TEST(ImageDecodeCost, AJpegIsDecodedAtTheSmallestScaleCoveringTheModelInput) {
  Bytes gray(size_t{448} * 448);
  for (size_t i = 0; i < gray.size(); ++i) gray[i] = static_cast<uint8_t>((i % 448) / 2);
  const Bytes jpeg = encode_jpeg(448, 448, TJPF_GRAY, gray, TJSAMP_GRAY, 0, 95);
  const Result<Image> full = decode_image(jpeg, 1);
  ASSERT_TRUE(full.is_ok()) << full.status().to_string();
  EXPECT_EQ(full->width, 448);
  // 1/8 of 448 is 56, still >= 28 on both sides.
  const Result<Image> scaled = decode_image(jpeg, 1, for_model(28, 28));
  ASSERT_TRUE(scaled.is_ok()) << scaled.status().to_string();
  EXPECT_EQ(scaled->width, 56);
  EXPECT_EQ(scaled->height, 56);
  EXPECT_EQ(scaled->pixels.size(), size_t{56} * 56);
  // Each scaled pixel is close to the mean of the 8x8 block of the full decode it stands for.
  int worst = 0;
  for (int y = 0; y < 56; ++y) {
    for (int x = 0; x < 56; ++x) {
      int sum = 0;
      for (int dy = 0; dy < 8; ++dy)
        for (int dx = 0; dx < 8; ++dx) sum += full->pixels[size_t{448} * (y * 8 + dy) + (x * 8 + dx)];
      worst = std::max(worst, std::abs(sum / 64 - scaled->pixels[size_t{56} * y + x]));
    }
  }
  EXPECT_LE(worst, 3);
  // RGB too; a 60x60 for 28x28 decodes at 1/2 (30x30): 3/8 would be 23, too small.
  const Bytes rgb = encode_jpeg(60, 60, TJPF_RGB, Bytes(size_t{60} * 60 * 3, 128), TJSAMP_420);
  const Result<Image> half = decode_image(rgb, 3, for_model(28, 28));
  ASSERT_TRUE(half.is_ok()) << half.status().to_string();
  EXPECT_EQ(half->width, 30);
  EXPECT_EQ(half->height, 30);
  // A JPEG no larger than twice the input on a side is not scaled (the 28x28 test images).
  const Bytes small = encode_jpeg(40, 40, TJPF_GRAY, Bytes(size_t{40} * 40, 90), TJSAMP_GRAY);
  EXPECT_EQ(decode_image(small, 1, for_model(28, 28))->width, 40);
}

}  // namespace
}  // namespace tessera
