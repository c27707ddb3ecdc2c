// model.toml for Caffe models (format = "caffe", weights, mean_file, input.channel_order) and the
// preprocessing Caffe expects: B, G, R planes, 0-255 pixels, a mean image subtracted first.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "accel/image/preprocess.h"
#include "accel/runtime/model_config.h"
#include "caffe.pb.h"

namespace tessera {
namespace {

class CaffeModelConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tessera-caffe-config-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    write("deploy.prototxt", "not parsed by load_model_config");
    write("model.caffemodel", "");
    write("labels.txt", "a\nb\n");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }

  // A C x H x W mean image whose value at (c, y, x) is 100 c + 10 y + x.
  void write_mean(int c, int h, int w) {
    caffe::BlobProto blob;
    blob.set_num(1);
    blob.set_channels(c);
    blob.set_height(h);
    blob.set_width(w);
    for (int ch = 0; ch < c; ++ch)
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) blob.add_data(static_cast<float>(100 * ch + 10 * y + x));
    std::ofstream(dir_ / "mean.binaryproto", std::ios::binary) << blob.SerializeAsString();
  }

  Result<ModelConfig> load(const std::string& toml) {
    write("model.toml", toml);
    return load_model_config(dir_);
  }

  void expect_error(const std::string& toml, const std::string& fragment) {
    auto config = load(toml);
    ASSERT_FALSE(config.is_ok()) << "accepted:\n" << toml;
    EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(config.status().message().find(fragment), std::string::npos) << config.status().message();
  }

  std::filesystem::path dir_;
};

const std::string kHead = "name = \"c\"\nformat = \"caffe\"\nfile = \"deploy.prototxt\"\nlabels = \"labels.txt\"\n";
const std::string kInput = "[input]\nwidth = 3\nheight = 2\nchannels = 3\nscale = 1.0\nchannel_order = \"bgr\"\n";

TEST_F(CaffeModelConfigTest, ParsesWeightsMeanFileAndChannelOrder) {
  write_mean(3, 4, 5);  // larger than the 2 x 3 input: centre-cropped (rows 1-2, cols 1-3)
  auto config = load(kHead + "weights = \"model.caffemodel\"\nmean_file = \"mean.binaryproto\"\n" + kInput);
  ASSERT_TRUE(config.is_ok()) << config.status().to_string();
  EXPECT_EQ(config->format, "caffe");
  EXPECT_EQ(config->weights, std::filesystem::absolute(dir_) / "model.caffemodel");
  EXPECT_EQ(config->mean_file, std::filesystem::absolute(dir_) / "mean.binaryproto");
  EXPECT_TRUE(config->input.bgr);
  EXPECT_FLOAT_EQ(config->input.scale, 1.0f);
  ASSERT_EQ(config->input.mean_image.size(), 18u);
  EXPECT_FLOAT_EQ(config->input.mean_image[0], 11);       // channel 0, row 1, col 1
  EXPECT_FLOAT_EQ(config->input.mean_image[5], 23);       // channel 0, row 2, col 3
  EXPECT_FLOAT_EQ(config->input.mean_image[6 + 2], 113);  // channel 1, row 1, col 3
}

TEST_F(CaffeModelConfigTest, BadCaffeSettingsNameTheKey) {
  const std::string weights = "weights = \"model.caffemodel\"\n";
  expect_error(kHead + kInput, "'weights' is required");
  expect_error(kHead + "weights = \"missing.caffemodel\"\n" + kInput, "'weights' names");
  expect_error(kHead + weights + "mean_file = \"missing.binaryproto\"\n" + kInput, "'mean_file' names");
  write("mean.binaryproto", "junk that is no BlobProto \x01\x02");
  expect_error(kHead + weights + "mean_file = \"mean.binaryproto\"\n" + kInput, "'mean_file' is not usable");
  write_mean(3, 1, 3);  // smaller than the input
  expect_error(kHead + weights + "mean_file = \"mean.binaryproto\"\n" + kInput, "'mean_file' holds a 3 x 1 x 3 mean");
  write_mean(1, 2, 3);  // gray mean for a colour input
  expect_error(kHead + weights + "mean_file = \"mean.binaryproto\"\n" + kInput, "'mean_file'");
  expect_error(kHead + weights + "[input]\nwidth = 3\nheight = 2\nchannels = 3\nchannel_order = \"brg\"\n",
               "'input.channel_order' must be");
  expect_error(kHead + weights + "[input]\nwidth = 3\nheight = 2\nchannels = 1\nchannel_order = \"bgr\"\n",
               "'input.channel_order' \"bgr\" needs");
  expect_error(
      "name = \"c\"\nformat = \"onnx\"\nfile = \"deploy.prototxt\"\nweights = \"model.caffemodel\"\n"
      "labels = \"labels.txt\"\n" +
          kInput,
      "'weights' is only for format = \"caffe\"");
  expect_error("name = \"c\"\nformat = \"caffe2\"\nfile = \"deploy.prototxt\"\nlabels = \"labels.txt\"\n" + kInput,
               "'format' must be \"onnx\" or \"caffe\"");
}

TEST(CaffePreprocess, BgrPlanesAndMeanImageInPixelUnits) {
  // 2 x 1 RGB image: (10, 20, 30) and (40, 50, 60).
  Image image{2, 1, 3, {10, 20, 30, 40, 50, 60}};
  PreprocessConfig config;
  config.width = 2;
  config.height = 1;
  config.channels = 3;
  config.scale = 2.0f;
  config.bgr = true;
  config.mean_image = {1, 2, 3, 4, 5, 6};  // B plane, G plane, R plane
  config.mean = {0.0f};
  config.std = {1.0f};
  auto t = preprocess(image, config);
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  // B = (30 - 1) / 2, (60 - 2) / 2; G = (20 - 3) / 2, (50 - 4) / 2; R = (10 - 5) / 2, (40 - 6) / 2
  EXPECT_EQ(t->data, (std::vector<float>{14.5f, 29, 8.5f, 23, 2.5f, 17}));

  config.bgr = false;
  config.mean_image.clear();
  auto rgb = preprocess(image, config);
  ASSERT_TRUE(rgb.is_ok());
  EXPECT_EQ(rgb->data, (std::vector<float>{5, 20, 10, 25, 15, 30}));

  config.mean_image = {1, 2};  // not C x H x W
  EXPECT_FALSE(preprocess(image, config).is_ok());
}

}  // namespace
}  // namespace tessera
