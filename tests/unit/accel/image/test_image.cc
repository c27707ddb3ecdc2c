// decode_image on PNG and JPEG data encoded here with spng and TurboJPEG, and its errors.
#include <gtest/gtest.h>
#include <spng.h>
#include <turbojpeg.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "accel/image/image.h"
#include "tests/common/test_images.h"

namespace tessera {
namespace {

using namespace test_images;  // NOLINT(google-build-using-namespace)

Bytes random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  Bytes out(n);
  for (auto& b : out) b = static_cast<uint8_t>(rng());
  return out;
}

// A smooth gradient (JPEG keeps it nearly exact at quality 100).
Bytes gradient(int width, int height, int channels) {
  Bytes out;
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < channels; ++c) out.push_back(static_cast<uint8_t>(40 + 4 * x + 3 * y + 20 * c));
  return out;
}

int max_abs_diff(const Bytes& a, const Bytes& b) {
  EXPECT_EQ(a.size(), b.size());
  int worst = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

Image decode_ok(const Bytes& data, int channels, const DecodeLimits& limits = {}) {
  Result<Image> image = decode_image(data, channels, limits);
  EXPECT_TRUE(image.is_ok()) << image.status().to_string();
  if (!image.is_ok()) return {};
  EXPECT_EQ(image->channels, channels);
  EXPECT_EQ(image->pixels.size(), static_cast<size_t>(image->width * image->height * channels));
  return std::move(image).value();
}

void expect_rejected(const Bytes& data, const std::string& why, const DecodeLimits& limits = {}, int channels = 3) {
  Result<Image> image = decode_image(data, channels, limits);
  ASSERT_FALSE(image.is_ok()) << "decoded but should fail with: " << why;
  EXPECT_EQ(image.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(image.status().message().find(why), std::string::npos)
      << "message \"" << image.status().message() << "\" lacks \"" << why << "\"";
}

const Bytes kRgb2x2 = {255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30};

TEST(ImageFormatTest, DetectsByMagicBytes) {
  EXPECT_EQ(detect_image_format(Bytes{0xFF, 0xD8, 0xFF, 0xE0}), ImageFormat::kJpeg);
  EXPECT_EQ(detect_image_format(Bytes{0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n', 0}), ImageFormat::kPng);
  EXPECT_EQ(detect_image_format(Bytes{'G', 'I', 'F', '8', '9', 'a'}), ImageFormat::kUnknown);
  EXPECT_EQ(detect_image_format(Bytes{0xFF, 0xD8}), ImageFormat::kUnknown);
  EXPECT_EQ(detect_image_format(Bytes{0x89, 'P', 'N', 'G'}), ImageFormat::kUnknown);
  EXPECT_EQ(detect_image_format(Bytes{}), ImageFormat::kUnknown);
}

TEST(ImagePngTest, GrayExactPixels) {
  const Bytes gray = {0, 1, 127, 128, 254, 255};
  const Bytes png = encode_png(3, 2, 8, SPNG_COLOR_TYPE_GRAYSCALE, gray);
  EXPECT_EQ(detect_image_format(png), ImageFormat::kPng);
  Image image = decode_ok(png, 1);
  EXPECT_EQ(image.width, 3);
  EXPECT_EQ(image.height, 2);
  EXPECT_EQ(image.pixels, gray);
  EXPECT_EQ(decode_ok(png, 3).pixels,
            (Bytes{0, 0, 0, 1, 1, 1, 127, 127, 127, 128, 128, 128, 254, 254, 254, 255, 255, 255}));
}

TEST(ImagePngTest, RgbExactPixelsAndBt601Luma) {
  const Bytes png = encode_png(2, 2, 8, SPNG_COLOR_TYPE_TRUECOLOR, kRgb2x2);
  EXPECT_EQ(decode_ok(png, 3).pixels, kRgb2x2);
  // round(0.299 * 255) = 76, round(0.587 * 255) = 150, round(0.114 * 255) = 29,
  // 0.299 * 10 + 0.587 * 20 + 0.114 * 30 = 18.15.
  EXPECT_EQ(decode_ok(png, 1).pixels, (Bytes{76, 150, 29, 18}));
}

TEST(ImagePngTest, PaletteExpandsToRgb) {
  spng_plte plte{};
  plte.n_entries = 3;
  plte.entries[0] = {255, 0, 0, 0};
  plte.entries[1] = {0, 255, 0, 0};
  plte.entries[2] = {10, 20, 30, 0};
  const Bytes indices = {0, 1, 2, 1};
  const Bytes png = encode_png(2, 2, 8, SPNG_COLOR_TYPE_INDEXED, indices.data(), indices.size(), false, &plte);
  EXPECT_EQ(decode_ok(png, 3).pixels, (Bytes{255, 0, 0, 0, 255, 0, 10, 20, 30, 0, 255, 0}));
  EXPECT_EQ(decode_ok(png, 1).pixels, (Bytes{76, 150, 18, 150}));
}

TEST(ImagePngTest, PaletteTransparencyIsCompositedOntoWhite) {
  spng_plte plte{};
  plte.n_entries = 3;
  plte.entries[0] = {255, 0, 0, 0};
  plte.entries[1] = {0, 255, 0, 0};
  plte.entries[2] = {0, 0, 255, 0};
  spng_trns trns{};
  trns.n_type3_entries = 2;
  trns.type3_alpha[0] = 0;    // fully transparent -> white
  trns.type3_alpha[1] = 128;  // half: (v * 128 + 255 * 127) / 255
  const Bytes indices = {0, 1, 2};
  const Bytes png = encode_png(3, 1, 8, SPNG_COLOR_TYPE_INDEXED, indices.data(), indices.size(), false, &plte, &trns);
  EXPECT_EQ(decode_ok(png, 3).pixels, (Bytes{255, 255, 255, 127, 255, 127, 0, 0, 255}));
}

TEST(ImagePngTest, RgbaIsCompositedOntoWhite) {
  const Bytes rgba = {100, 50, 0, 128, 10, 20, 30, 255, 0, 0, 0, 0};
  const Bytes png = encode_png(3, 1, 8, SPNG_COLOR_TYPE_TRUECOLOR_ALPHA, rgba);
  // 100 at alpha 128: (100 * 128 + 255 * 127) / 255 = 177.2 -> 177; 50 -> 152.1; 0 -> 127.
  EXPECT_EQ(decode_ok(png, 3).pixels, (Bytes{177, 152, 127, 10, 20, 30, 255, 255, 255}));
  EXPECT_EQ(decode_ok(png, 1).pixels, (Bytes{157, 18, 255}));
}

TEST(ImagePngTest, GrayAlphaIsCompositedOntoWhite) {
  const Bytes ga = {200, 255, 0, 0, 0, 255};
  const Bytes png = encode_png(3, 1, 8, SPNG_COLOR_TYPE_GRAYSCALE_ALPHA, ga);
  EXPECT_EQ(decode_ok(png, 1).pixels, (Bytes{200, 255, 0}));
}

TEST(ImagePngTest, SixteenBitKeepsTheHighByte) {
  const std::vector<uint16_t> gray = {0x0000, 0x12FF, 0x8000, 0xFFFF};
  const Bytes png = encode_png(2, 2, 16, SPNG_COLOR_TYPE_GRAYSCALE, gray.data(), gray.size() * 2);
  EXPECT_EQ(decode_ok(png, 1).pixels, (Bytes{0x00, 0x12, 0x80, 0xFF}));
  const std::vector<uint16_t> rgb = {0x1234, 0x5678, 0x9ABC, 0xFFFF, 0x00FF, 0x8080};
  const Bytes png_rgb = encode_png(2, 1, 16, SPNG_COLOR_TYPE_TRUECOLOR, rgb.data(), rgb.size() * 2);
  EXPECT_EQ(decode_ok(png_rgb, 3).pixels, (Bytes{0x12, 0x56, 0x9A, 0xFF, 0x00, 0x80}));
}

TEST(ImagePngTest, OneBitGrayScalesToFullRange) {
  const Bytes packed = {0x80, 0x40};  // rows "1 0" and "0 1"
  const Bytes png = encode_png(2, 2, 1, SPNG_COLOR_TYPE_GRAYSCALE, packed);
  EXPECT_EQ(decode_ok(png, 1).pixels, (Bytes{255, 0, 0, 255}));
}

TEST(ImagePngTest, InterlacedDecodesLikePlain) {
  const Bytes rgb = random_bytes(9 * 7 * 3, 1);
  const Bytes plain = encode_png(9, 7, 8, SPNG_COLOR_TYPE_TRUECOLOR, rgb);
  const Bytes adam7 = encode_png(9, 7, 8, SPNG_COLOR_TYPE_TRUECOLOR, rgb.data(), rgb.size(), true);
  EXPECT_EQ(decode_ok(adam7, 3).pixels, rgb);
  EXPECT_EQ(decode_ok(adam7, 1).pixels, decode_ok(plain, 1).pixels);
  const Bytes rgba = random_bytes(9 * 7 * 4, 2);
  const Bytes plain_a = encode_png(9, 7, 8, SPNG_COLOR_TYPE_TRUECOLOR_ALPHA, rgba);
  const Bytes adam7_a = encode_png(9, 7, 8, SPNG_COLOR_TYPE_TRUECOLOR_ALPHA, rgba.data(), rgba.size(), true);
  EXPECT_EQ(decode_ok(adam7_a, 3).pixels, decode_ok(plain_a, 3).pixels);
}

TEST(ImageJpegTest, GrayRoundTrip) {
  const Bytes gray = gradient(16, 16, 1);
  const Bytes jpeg = encode_jpeg(16, 16, TJPF_GRAY, gray, TJSAMP_GRAY);
  EXPECT_EQ(detect_image_format(jpeg), ImageFormat::kJpeg);
  const Image image = decode_ok(jpeg, 1);
  EXPECT_EQ(image.width, 16);
  EXPECT_EQ(image.height, 16);
  EXPECT_LE(max_abs_diff(image.pixels, gray), 2);
  const Image rgb = decode_ok(jpeg, 3);
  for (size_t i = 0; i < image.pixels.size(); ++i) {
    ASSERT_EQ(rgb.pixels[3 * i], image.pixels[i]);
    ASSERT_EQ(rgb.pixels[3 * i + 1], image.pixels[i]);
    ASSERT_EQ(rgb.pixels[3 * i + 2], image.pixels[i]);
  }
}

TEST(ImageJpegTest, RgbRoundTripAndLuma) {
  const Bytes rgb = gradient(16, 8, 3);
  const Bytes jpeg = encode_jpeg(16, 8, TJPF_RGB, rgb, TJSAMP_444);
  EXPECT_LE(max_abs_diff(decode_ok(jpeg, 3).pixels, rgb), 3);
  Bytes luma;
  for (size_t i = 0; i < rgb.size(); i += 3) {
    luma.push_back(static_cast<uint8_t>((299 * rgb[i] + 587 * rgb[i + 1] + 114 * rgb[i + 2] + 500) / 1000));
  }
  EXPECT_LE(max_abs_diff(decode_ok(jpeg, 1).pixels, luma), 3);
}

TEST(ImageJpegTest, ProgressiveAndSubsampledDecode) {
  const Bytes rgb = gradient(24, 16, 3);
  const Bytes jpeg = encode_jpeg(24, 16, TJPF_RGB, rgb, TJSAMP_420, TJFLAG_PROGRESSIVE, 95);
  const Image image = decode_ok(jpeg, 3);
  EXPECT_EQ(image.width, 24);
  EXPECT_LE(max_abs_diff(image.pixels, rgb), 8);
}

TEST(ImageJpegTest, ToleratesStrayBytesBeforeEoi) {
  const Bytes jpeg = encode_jpeg(16, 16, TJPF_GRAY, gradient(16, 16, 1), TJSAMP_GRAY);
  Bytes stray = jpeg;
  stray.insert(stray.end() - 2, {0x01, 0x02, 0x03});  // libjpeg: "3 extraneous bytes before marker 0xd9"
  EXPECT_EQ(decode_ok(stray, 1).pixels, decode_ok(jpeg, 1).pixels);
}

TEST(ImageJpegTest, RejectsCmyk) {
  const Bytes cmyk(8 * 8 * 4, 100);
  expect_rejected(encode_jpeg(8, 8, TJPF_CMYK, cmyk, TJSAMP_444), "CMYK");
}

TEST(ImageDecodeErrorTest, Empty) { expect_rejected({}, "empty"); }

TEST(ImageDecodeErrorTest, RandomBytes) { expect_rejected(random_bytes(256, 3), "not a JPEG or PNG image"); }

TEST(ImageDecodeErrorTest, OtherFormatsAreNamed) {
  Bytes gif = {'G', 'I', 'F', '8', '9', 'a', 1, 0, 1, 0, 0, 0, 0};
  expect_rejected(gif, "not a JPEG or PNG image");
  expect_rejected(gif, "GIF");
  Bytes bmp = {'B', 'M', 0x3A, 0, 0, 0, 0, 0, 0, 0, 0x36, 0, 0, 0};
  expect_rejected(bmp, "BMP");
}

TEST(ImageDecodeErrorTest, WantChannelsMustBeOneOrThree) {
  const Bytes png = encode_png(2, 2, 8, SPNG_COLOR_TYPE_TRUECOLOR, kRgb2x2);
  expect_rejected(png, "want_channels", {}, 2);
}

TEST(ImageDecodeErrorTest, OverMaxBytes) {
  const Bytes png = encode_png(2, 2, 8, SPNG_COLOR_TYPE_TRUECOLOR, kRgb2x2);
  DecodeLimits limits;
  limits.max_bytes = 32;
  expect_rejected(png, "the limit is 32", limits);
}

TEST(ImageDecodeErrorTest, TruncatedPng) {
  const Bytes png = encode_png(32, 32, 8, SPNG_COLOR_TYPE_TRUECOLOR, random_bytes(32 * 32 * 3, 4));
  expect_rejected(Bytes(png.begin(), png.begin() + static_cast<ptrdiff_t>(png.size() / 2)), "truncated PNG");
  expect_rejected(Bytes(png.begin(), png.begin() + 20), "truncated PNG");
  // All pixel data present but the IEND chunk missing: the file is still cut short.
  expect_rejected(Bytes(png.begin(), png.end() - 12), "truncated PNG");
}

TEST(ImageDecodeErrorTest, PngWithCorruptedCrc) {
  const Bytes png = encode_png(32, 32, 8, SPNG_COLOR_TYPE_TRUECOLOR, random_bytes(32 * 32 * 3, 5));
  Bytes bad_ihdr = png;
  bad_ihdr[29] ^= 0x01;
  expect_rejected(bad_ihdr, "checksum");
  Bytes bad_idat = png;
  bad_idat[png.size() - 13] ^= 0x01;  // last byte of the last IDAT's CRC
  expect_rejected(bad_idat, "checksum");
}

TEST(ImageDecodeErrorTest, CorruptPngData) {
  Bytes png = encode_png(32, 32, 8, SPNG_COLOR_TYPE_TRUECOLOR, random_bytes(32 * 32 * 3, 6));
  for (size_t i = 45; i < 60; ++i) png[i] = 0xAA;  // inside the first IDAT's data
  expect_rejected(png, "corrupt PNG");
}

TEST(ImageDecodeErrorTest, TruncatedJpeg) {
  const Bytes jpeg = encode_jpeg(32, 32, TJPF_RGB, random_bytes(32 * 32 * 3, 7), TJSAMP_420, 0, 90);
  const Bytes half(jpeg.begin(), jpeg.begin() + static_cast<ptrdiff_t>(jpeg.size() / 2));
  expect_rejected(half, "truncated JPEG");
  expect_rejected(half, "Premature end");
  expect_rejected(Bytes(jpeg.begin(), jpeg.end() - 2), "truncated JPEG");    // no EOI marker
  expect_rejected(Bytes(jpeg.begin(), jpeg.begin() + 200), "corrupt JPEG");  // ends in the headers
  expect_rejected(Bytes(jpeg.begin(), jpeg.begin() + 20), "corrupt JPEG");
}

TEST(ImageDecodeErrorTest, CorruptJpegHeader) {
  Bytes jpeg = encode_jpeg(8, 8, TJPF_GRAY, gradient(8, 8, 1), TJSAMP_GRAY);
  for (size_t i = 2; i + 4 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xC0) {
      jpeg[i + 4] = 7;  // sample precision
      break;
    }
  }
  expect_rejected(jpeg, "corrupt JPEG: Unsupported JPEG data precision 7");
}

TEST(ImageDecodeErrorTest, JpegErrorAfterAToleratedWarning) {
  // Stray bytes before the second scan (a warning), then impossible progression parameters in
  // the last scan (an error TurboJPEG 2.1 still labels a warning, as one came first).
  Bytes jpeg = encode_jpeg(32, 32, TJPF_RGB, random_bytes(32 * 32 * 3, 8), TJSAMP_420, TJFLAG_PROGRESSIVE, 90);
  std::vector<size_t> scans;
  for (size_t i = 0; i + 1 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xDA) scans.push_back(i);
  }
  ASSERT_GE(scans.size(), 3u);
  const size_t ss = scans.back() + 5 + 2 * size_t{jpeg[scans.back() + 4]};  // after the component list
  jpeg[ss] = 5;                                                             // Ss > Se
  jpeg[ss + 1] = 0;
  jpeg.insert(jpeg.begin() + static_cast<ptrdiff_t>(scans[1]), {0x01, 0x02, 0x03});
  expect_rejected(jpeg, "corrupt JPEG: Invalid progressive parameters");
}

TEST(ImageDecodeErrorTest, HugePngHeaderIsRejectedBeforeDecoding) {
  const Bytes png = with_png_size(encode_png(2, 2, 8, SPNG_COLOR_TYPE_TRUECOLOR, kRgb2x2), 100000, 100000);
  expect_rejected(png, "PNG image is 100000x100000 pixels; the limit is 16384 pixels per side");
  DecodeLimits wide;
  wide.max_side = 200000;
  expect_rejected(png, "100000x100000 = 10000000000 pixels; the limit is 40000000 pixels", wide);
  const Bytes tall = with_png_size(encode_png(2, 2, 8, SPNG_COLOR_TYPE_TRUECOLOR, kRgb2x2), 1, 20000);
  expect_rejected(tall, "PNG image is 1x20000 pixels");
}

TEST(ImageDecodeErrorTest, HugeJpegHeaderIsRejectedBeforeDecoding) {
  // JPEG dimensions are 16-bit (libjpeg-turbo caps them at 65500), so 60000 stands in for 100000.
  const Bytes jpeg = encode_jpeg(8, 8, TJPF_GRAY, gradient(8, 8, 1), TJSAMP_GRAY);
  expect_rejected(with_jpeg_size(jpeg, 60000, 60000),
                  "JPEG image is 60000x60000 pixels; the limit is 16384 pixels per side");
  expect_rejected(with_jpeg_size(jpeg, 10000, 10000), "10000x10000 = 100000000 pixels; the limit is 40000000 pixels");
}

TEST(ImageDecodeErrorTest, CustomLimitsApply) {
  const Bytes png = encode_png(3, 2, 8, SPNG_COLOR_TYPE_GRAYSCALE, Bytes(6, 9));
  DecodeLimits limits;
  limits.max_side = 2;
  expect_rejected(png, "3x2 pixels; the limit is 2 pixels per side", limits);
  limits.max_side = 16;
  limits.max_pixels = 5;
  expect_rejected(png, "the limit is 5 pixels", limits);
  limits.max_pixels = 6;
  EXPECT_TRUE(decode_image(png, 1, limits).is_ok());
}

}  // namespace
}  // namespace tessera
