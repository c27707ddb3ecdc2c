// preprocess / preprocess_into on small hand-checked images.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "accel/image/preprocess.h"

namespace tessera {
namespace {

Image make_image(int width, int height, int channels, std::vector<uint8_t> pixels) {
  Image image;
  image.width = width;
  image.height = height;
  image.channels = channels;
  image.pixels = std::move(pixels);
  return image;
}

// A gray image whose border ring is `border` and whose inside is `inside`.
Image framed(int width, int height, uint8_t border, uint8_t inside) {
  Image image = make_image(width, height, 1,
                           std::vector<uint8_t>(static_cast<size_t>(width) * static_cast<size_t>(height), border));
  for (int y = 1; y + 1 < height; ++y)
    for (int x = 1; x + 1 < width; ++x)
      image.pixels[static_cast<size_t>(y) * static_cast<size_t>(width) + static_cast<size_t>(x)] = inside;
  return image;
}

// Raw pixel values out (scale 1, no mean/std) unless the test says otherwise.
PreprocessConfig raw_config(int width, int height, int channels = 1, ResizeMode resize = ResizeMode::kStretch) {
  PreprocessConfig config;
  config.width = width;
  config.height = height;
  config.channels = channels;
  config.scale = 1.0f;
  config.resize = resize;
  return config;
}

std::vector<float> run(const Image& image, const PreprocessConfig& config) {
  Result<Tensor> tensor = preprocess(image, config);
  EXPECT_TRUE(tensor.is_ok()) << tensor.status().to_string();
  if (!tensor.is_ok()) return {};
  return tensor->data;
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want, float tolerance = 1e-4f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tolerance) << "at " << i;
}

void expect_rejected(const Image& image, const PreprocessConfig& config, const std::string& why) {
  Result<Tensor> tensor = preprocess(image, config);
  ASSERT_FALSE(tensor.is_ok());
  EXPECT_EQ(tensor.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(tensor.status().message().find(why), std::string::npos)
      << "message \"" << tensor.status().message() << "\" lacks \"" << why << "\"";
}

TEST(PreprocessTest, SameSizeStretchIsExact) {
  std::mt19937 rng(7);
  std::vector<uint8_t> pixels(28 * 28);
  for (auto& p : pixels) p = static_cast<uint8_t>(rng());
  const Image image = make_image(28, 28, 1, pixels);
  PreprocessConfig config = raw_config(28, 28);
  config.scale = 255.0f;
  Result<Tensor> tensor = preprocess(image, config);
  ASSERT_TRUE(tensor.is_ok()) << tensor.status().to_string();
  EXPECT_EQ(tensor->shape, (Shape{1, 1, 28, 28}));
  for (size_t i = 0; i < pixels.size(); ++i) ASSERT_EQ(tensor->data[i], static_cast<float>(pixels[i]) / 255.0f);
  // Fit and centre crop at the same size are exact too.
  config.resize = ResizeMode::kFit;
  EXPECT_EQ(run(image, config), tensor->data);
  config.resize = ResizeMode::kCenterCrop;
  EXPECT_EQ(run(image, config), tensor->data);
}

TEST(PreprocessTest, MeanStdNormalisation) {
  const Image gray = make_image(3, 1, 1, {0, 51, 255});
  PreprocessConfig config = raw_config(3, 1);
  config.scale = 255.0f;
  config.mean = {0.5f};
  config.std = {0.25f};
  expect_near(run(gray, config), {-2.0f, -1.2f, 2.0f}, 1e-6f);

  const Image rgb = make_image(1, 1, 3, {255, 0, 51});
  PreprocessConfig imagenet = raw_config(1, 1, 3);
  imagenet.scale = 255.0f;
  imagenet.mean = {0.485f, 0.456f, 0.406f};
  imagenet.std = {0.229f, 0.224f, 0.225f};
  expect_near(run(rgb, imagenet), {(1.0f - 0.485f) / 0.229f, (0.0f - 0.456f) / 0.224f, (0.2f - 0.406f) / 0.225f},
              1e-5f);
  imagenet.mean = {0.5f};  // one value serves every channel
  imagenet.std = {};
  expect_near(run(rgb, imagenet), {0.5f, -0.5f, -0.3f}, 1e-6f);
}

TEST(PreprocessTest, OutputIsPlanar) {
  const Image rgb = make_image(2, 1, 3, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(run(rgb, raw_config(2, 1, 3)), (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

TEST(PreprocessTest, RgbToGrayUsesBt601Luma) {
  const Image rgb = make_image(4, 1, 3, {255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30});
  EXPECT_EQ(run(rgb, raw_config(4, 1, 1)), (std::vector<float>{76, 150, 29, 18}));
}

TEST(PreprocessTest, GrayToRgbReplicates) {
  const Image gray = make_image(2, 1, 1, {7, 200});
  EXPECT_EQ(run(gray, raw_config(2, 1, 3)), (std::vector<float>{7, 200, 7, 200, 7, 200}));
}

TEST(PreprocessTest, InvertYesAndNo) {
  const Image gray = make_image(3, 1, 1, {0, 100, 255});
  PreprocessConfig config = raw_config(3, 1);
  config.invert = InvertMode::kYes;
  EXPECT_EQ(run(gray, config), (std::vector<float>{255, 155, 0}));
  config.invert = InvertMode::kNo;
  EXPECT_EQ(run(gray, config), (std::vector<float>{0, 100, 255}));
}

TEST(PreprocessTest, InvertAutoKeepsDarkBackground) {
  // Fashion-MNIST style: light object on a dark background.
  const Image image = framed(5, 5, 0, 200);
  PreprocessConfig config = raw_config(5, 5);
  config.invert = InvertMode::kAuto;
  std::vector<float> want(image.pixels.begin(), image.pixels.end());
  EXPECT_EQ(run(image, config), want);
}

TEST(PreprocessTest, InvertAutoInvertsLightBackground) {
  // A photo of a dark object on a light background.
  const Image image = framed(5, 5, 240, 20);
  PreprocessConfig config = raw_config(5, 5);
  config.invert = InvertMode::kAuto;
  const Image want = framed(5, 5, 15, 235);
  EXPECT_EQ(run(image, config), std::vector<float>(want.pixels.begin(), want.pixels.end()));
  // A uniform image has no brighter border: left alone.
  const Image flat = framed(4, 4, 230, 230);
  EXPECT_EQ(run(flat, raw_config(4, 4)), std::vector<float>(16, 230.0f));
  PreprocessConfig auto_flat = raw_config(4, 4);
  auto_flat.invert = InvertMode::kAuto;
  EXPECT_EQ(run(flat, auto_flat), std::vector<float>(16, 230.0f));
}

TEST(PreprocessTest, StretchUpscaleIsBilinear) {
  // Half-pixel centres: output x maps to source (x + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25.
  expect_near(run(make_image(2, 1, 1, {0, 100}), raw_config(4, 1)), {0, 25, 75, 100});
  // 2x2 -> 4x4, pixel (1, 1) samples (0.25, 0.25).
  const std::vector<float> out = run(make_image(2, 2, 1, {0, 100, 100, 200}), raw_config(4, 4));
  ASSERT_EQ(out.size(), 16u);
  EXPECT_NEAR(out[0], 0.0f, 1e-4f);
  EXPECT_NEAR(out[5], 50.0f, 1e-4f);
  EXPECT_NEAR(out[15], 200.0f, 1e-4f);
}

TEST(PreprocessTest, StretchHalvingAveragesPairs) {
  expect_near(run(make_image(4, 1, 1, {0, 100, 200, 40}), raw_config(2, 1)), {50, 120});
}

TEST(PreprocessTest, StrongDownscaleAveragesAreas) {
  // 1-pixel stripes (odd columns white) shrunk 7x: bilinear would pick single columns and
  // alias to 0/255; area averaging gives each output the mean of its 7 columns.
  std::vector<uint8_t> stripes(56);
  for (size_t x = 0; x < stripes.size(); ++x) stripes[x] = x % 2 ? 255 : 0;
  const float three = 3 * 255.0f / 7, four = 4 * 255.0f / 7;
  expect_near(run(make_image(56, 1, 1, stripes), raw_config(8, 1)),
              {three, four, three, four, three, four, three, four}, 1e-3f);
  // Non-integral ratios keep a flat image flat (weights sum to 1).
  const Image flat = make_image(100, 83, 1, std::vector<uint8_t>(100 * 83, 77));
  for (ResizeMode mode : {ResizeMode::kStretch, ResizeMode::kFit, ResizeMode::kCenterCrop}) {
    expect_near(run(flat, raw_config(28, 28, 1, mode)), std::vector<float>(28 * 28, 77.0f), 1e-3f);
  }
}

TEST(PreprocessTest, FitPadsWithTheBorderMean) {
  // 6x3 -> 6x6 at scale 1: the image lands on rows 1..3 unchanged; rows 0, 4, 5 are padding.
  const Image image = framed(6, 3, 10, 200);
  const std::vector<float> out = run(image, raw_config(6, 6, 1, ResizeMode::kFit));
  ASSERT_EQ(out.size(), 36u);
  for (int y = 0; y < 6; ++y) {
    for (int x = 0; x < 6; ++x) {
      const float want =
          (y >= 1 && y <= 3) ? image.pixels[static_cast<size_t>(y - 1) * 6 + static_cast<size_t>(x)] : 10.0f;
      EXPECT_EQ(out[static_cast<size_t>(y * 6 + x)], want) << "at " << x << "," << y;
    }
  }
}

TEST(PreprocessTest, FitScalesTheLongerSide) {
  // 2x1 -> 4x4: scaled 2x to 4x2, centred on rows 1..2; padding is the border mean 50.
  expect_near(run(make_image(2, 1, 1, {0, 100}), raw_config(4, 4, 1, ResizeMode::kFit)),
              {50, 50, 50, 50, 0, 25, 75, 100, 0, 25, 75, 100, 50, 50, 50, 50});
  // A tall 1x2 -> 2x2 stays 1x2, at column (2 - 1) / 2 = 0; column 1 is padding.
  expect_near(run(make_image(1, 2, 1, {30, 60}), raw_config(2, 2, 1, ResizeMode::kFit)), {30, 45, 60, 45});
}

TEST(PreprocessTest, FitPaddingFollowsAutoInversion) {
  const Image image = framed(6, 3, 240, 20);
  PreprocessConfig config = raw_config(6, 6, 1, ResizeMode::kFit);
  config.invert = InvertMode::kAuto;
  const std::vector<float> out = run(image, config);
  ASSERT_EQ(out.size(), 36u);
  for (int x = 0; x < 6; ++x) {
    EXPECT_EQ(out[static_cast<size_t>(x)], 15.0f);          // padding row 0
    EXPECT_EQ(out[static_cast<size_t>(5 * 6 + x)], 15.0f);  // padding row 5
    EXPECT_EQ(out[static_cast<size_t>(1 * 6 + x)], 15.0f);  // the image's inverted border
  }
  EXPECT_EQ(out[2 * 6 + 2], 235.0f);  // the inverted inside
}

TEST(PreprocessTest, CenterCropKeepsTheMiddle) {
  // 6x2 -> 2x2 at scale 1 is a pure crop of columns 2..3.
  const Image wide = make_image(6, 2, 1, {0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15});
  EXPECT_EQ(run(wide, raw_config(2, 2, 1, ResizeMode::kCenterCrop)), (std::vector<float>{2, 3, 12, 13}));
  // 2x6 -> 2x2: rows 2..3.
  const Image tall = make_image(2, 6, 1, {0, 1, 10, 11, 20, 21, 30, 31, 40, 41, 50, 51});
  EXPECT_EQ(run(tall, raw_config(2, 2, 1, ResizeMode::kCenterCrop)), (std::vector<float>{20, 21, 30, 31}));
  // 8x4 -> 2x2: the centre 4x4 (columns 2..5) halved, so each output is a 2x2 block mean.
  std::vector<uint8_t> pixels;
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 8; ++x) pixels.push_back(static_cast<uint8_t>(10 * x + y));
  expect_near(run(make_image(8, 4, 1, pixels), raw_config(2, 2, 1, ResizeMode::kCenterCrop)),
              {25.5f, 45.5f, 27.5f, 47.5f});
}

TEST(PreprocessTest, SameSizeColourAndIntegralCropsAreExactPlanarCopies) {
  // 3 interleaved channels, same size: each plane is its channel's bytes as floats.
  std::mt19937 rng(11);
  std::vector<uint8_t> pixels(5 * 4 * 3);
  for (auto& p : pixels) p = static_cast<uint8_t>(rng());
  std::vector<float> planar(pixels.size());
  for (size_t i = 0; i < 5 * 4; ++i)
    for (size_t c = 0; c < 3; ++c) planar[c * 20 + i] = pixels[i * 3 + c];
  EXPECT_EQ(run(make_image(5, 4, 3, pixels), raw_config(5, 4, 3)), planar);
  // A centre crop at an integral offset (7x4 -> 3x4: columns 2..4) copies those columns of each channel.
  std::vector<uint8_t> wide(7 * 4 * 3);
  for (auto& p : wide) p = static_cast<uint8_t>(rng());
  std::vector<float> cropped;
  for (size_t c = 0; c < 3; ++c)
    for (size_t y = 0; y < 4; ++y)
      for (size_t x = 2; x < 5; ++x) cropped.push_back(wide[(y * 7 + x) * 3 + c]);
  EXPECT_EQ(run(make_image(7, 4, 3, wide), raw_config(3, 4, 3, ResizeMode::kCenterCrop)), cropped);
}

TEST(PreprocessTest, IntoWritesOneBatchSlot) {
  const Image gray = make_image(2, 1, 1, {10, 20});
  std::vector<float> batch(6, -1.0f);
  ASSERT_TRUE(preprocess_into(gray, raw_config(2, 1), batch.data() + 2).is_ok());
  EXPECT_EQ(batch, (std::vector<float>{-1, -1, 10, 20, -1, -1}));
  EXPECT_EQ(preprocess_into(gray, raw_config(2, 1), nullptr).code(), StatusCode::kInvalidArgument);
}

TEST(PreprocessTest, BadConfigsAreRejected) {
  const Image gray = make_image(2, 2, 1, {1, 2, 3, 4});
  PreprocessConfig config = raw_config(0, 2);
  expect_rejected(gray, config, "target size 0x2");
  config = raw_config(2, -1);
  expect_rejected(gray, config, "must be positive");
  config = raw_config(2, 2, 2);
  expect_rejected(gray, config, "channels must be 1 or 3");
  config = raw_config(2, 2, 3);
  config.mean = {0.1f, 0.2f};
  expect_rejected(gray, config, "mean has 2 values");
  config = raw_config(2, 2, 3);
  config.std = {1.0f, 0.0f, 1.0f};
  expect_rejected(gray, config, "std must not be 0");
  config = raw_config(2, 2);
  config.scale = 0.0f;
  expect_rejected(gray, config, "scale must be positive");
  config = raw_config(2, 2);
  config.mean = {std::numeric_limits<float>::quiet_NaN()};
  expect_rejected(gray, config, "mean is not finite");
  expect_rejected(make_image(2, 2, 1, {1, 2, 3}), raw_config(2, 2), "malformed image");
  expect_rejected(make_image(2, 2, 4, std::vector<uint8_t>(16)), raw_config(2, 2), "malformed image");
}

}  // namespace
}  // namespace tessera
