// model.toml parsing: the bundled model's file, and every bad config is an error naming the key.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "accel/runtime/model_config.h"

namespace tessera {
namespace {

class ModelConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tessera-config-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    write("model.onnx", "not parsed by load_model_config");
    write("labels.txt", "cat\ndog\r\n\nbird\n");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }

  void expect_error(const std::string& toml, const std::string& fragment) {
    write("model.toml", toml);
    auto config = load_model_config(dir_);
    ASSERT_FALSE(config.is_ok()) << "accepted:\n" << toml;
    EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(config.status().message().find(fragment), std::string::npos) << config.status().message();
  }

  std::filesystem::path dir_;
};

const char* kValid = R"(
name = "pets"
file = "model.onnx"
labels = "labels.txt"
[input]
width = 32
height = 24
channels = 3
mean = [0.5, 0.4, 0.3]
std = [0.2]
invert = "auto"
resize = "center_crop"
)";

TEST_F(ModelConfigTest, ParsesEveryField) {
  write("model.toml", kValid);
  auto config = load_model_config(dir_);
  ASSERT_TRUE(config.is_ok()) << config.status().to_string();
  EXPECT_EQ(config->name, "pets");
  EXPECT_EQ(config->file, std::filesystem::absolute(dir_) / "model.onnx");
  EXPECT_EQ(config->input.width, 32);
  EXPECT_EQ(config->input.height, 24);
  EXPECT_EQ(config->input.channels, 3);
  EXPECT_FLOAT_EQ(config->input.scale, 255.0f);
  EXPECT_EQ(config->input.mean, (std::vector<float>{0.5f, 0.4f, 0.3f}));
  EXPECT_EQ(config->input.std, (std::vector<float>{0.2f, 0.2f, 0.2f}));  // one value applies to all channels
  EXPECT_EQ(config->input.invert, InvertMode::kAuto);
  EXPECT_EQ(config->input.resize, ResizeMode::kCenterCrop);
  EXPECT_EQ(config->labels, (std::vector<std::string>{"cat", "dog", "bird"}));
}

TEST_F(ModelConfigTest, BundledModelConfigLoads) {
  auto config = load_model_config(std::filesystem::path(TESSERA_SOURCE_DIR) / "models/fashion-mnist");
  ASSERT_TRUE(config.is_ok()) << config.status().to_string();
  EXPECT_EQ(config->name, "fashion-mnist");
  EXPECT_EQ(config->input.width, 28);
  EXPECT_EQ(config->input.channels, 1);
  ASSERT_EQ(config->labels.size(), 10u);
  EXPECT_EQ(config->labels.front(), "T-shirt/top");
  EXPECT_EQ(config->labels.back(), "Ankle boot");
}

TEST_F(ModelConfigTest, MissingFolderOrFileIsNotFound) {
  auto config = load_model_config(dir_ / "nope");
  ASSERT_FALSE(config.is_ok());
  EXPECT_EQ(config.status().code(), StatusCode::kNotFound);
}

TEST_F(ModelConfigTest, BadConfigsNameTheKey) {
  expect_error("name = \"x\"\nfile = \"model.onnx\"\nlabels = \"labels.txt\"\n", "'input'");
  expect_error("file = \"model.onnx\"\nlabels = \"labels.txt\"\n[input]\nwidth=1\nheight=1\nchannels=1\n", "'name'");
  expect_error("name = \"x\"\nfile = \"gone.onnx\"\nlabels = \"labels.txt\"\n[input]\nwidth=1\nheight=1\nchannels=1\n",
               "'file'");
  expect_error("name = \"x\"\nfile = \"model.onnx\"\nlabels = \"labels.txt\"\n[input]\nwidth=0\nheight=1\nchannels=1\n",
               "'input.width'");
  expect_error("name = \"x\"\nfile = \"model.onnx\"\nlabels = \"labels.txt\"\n[input]\nwidth=2\nheight=1\nchannels=2\n",
               "'input.channels'");
  expect_error(
      "name = \"x\"\nfile = \"model.onnx\"\nlabels = \"labels.txt\"\n[input]\nwidth=2\nheight=1\nchannels=3\n"
      "mean=[1,2]\n",
      "'input.mean'");
  expect_error(
      "name = \"x\"\nfile = \"model.onnx\"\nlabels = \"labels.txt\"\n[input]\nwidth=2\nheight=1\nchannels=1\n"
      "std=[0]\n",
      "'input.std'");
  expect_error(
      "name = \"x\"\nfile = \"model.onnx\"\nlabels = \"labels.txt\"\n[input]\nwidth=2\nheight=1\nchannels=1\n"
      "invert=\"sometimes\"\n",
      "'input.invert'");
  expect_error(
      "name = \"x\"\nfile = \"model.onnx\"\nlabels = \"labels.txt\"\n[input]\nwidth=2\nheight=1\nchannels=1\n"
      "resize=\"zoom\"\n",
      "'input.resize'");
  expect_error(
      "name = \"x\"\nformat = \"tflite\"\nfile = \"model.onnx\"\nlabels = \"labels.txt\"\n[input]\n"
      "width=2\nheight=1\nchannels=1\n",
      "'format'");
  expect_error("name = [oops", "model.toml:1");
}

TEST_F(ModelConfigTest, BatchingAndPrecisionOverrideTheDaemon) {
  write("model.toml", std::string(kValid) + "precision = \"fp32\"\n" /* lands in [input]: refused below */);
  EXPECT_FALSE(load_model_config(dir_).is_ok());
  write("model.toml",
        "precision = \"fp32\"\n" + std::string(kValid) + "[batching]\nmax_batch = 16\nmax_queue_delay_us = 500\n");
  auto config = load_model_config(dir_);
  ASSERT_TRUE(config.is_ok()) << config.status().to_string();
  EXPECT_EQ(config->precision, "fp32");
  EXPECT_EQ(config->batching.max_batch, 16u);
  EXPECT_EQ(config->batching.max_queue_delay_us, 500u);
  EXPECT_FALSE(config->batching.max_queue.has_value()) << "unset: the daemon's --max-queue";
}

TEST_F(ModelConfigTest, UnknownKeysAreErrorsNamingTheKey) {
  expect_error("colour = 1\n" + std::string(kValid), "'colour'");
  expect_error(std::string(kValid) + "widht = 3\n", "'input.widht'");
  expect_error(std::string(kValid) + "[quantization]\nmetod = \"minmax\"\n", "'quantization.metod'");
  expect_error(std::string(kValid) + "[batching]\nmax_batches = 4\n", "'batching.max_batches'");
  expect_error(std::string(kValid) + "[batching]\nmax_batch = 0\n", "'batching.max_batch'");
  expect_error("precision = \"int4\"\n" + std::string(kValid), "'precision'");
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// [instances] and [version_policy]: parsed, and a bad one is an error naming the key.
TEST_F(ModelConfigTest, InstancesAndVersionPolicy) {
  write("model.toml", std::string(kValid) + "[instances]\ndevices = [0, 2]\n[version_policy]\nspecific = [1, 3]\n");
  auto config = load_model_config(dir_);
  ASSERT_TRUE(config.is_ok()) << config.status().to_string();
  EXPECT_EQ(config->instances.devices, (std::vector<unsigned>{0, 2}));
  EXPECT_FALSE(config->instances.count.has_value());
  EXPECT_EQ(config->version_policy.specific, (std::vector<int64_t>{1, 3}));
  auto policy = read_version_policy(dir_);
  ASSERT_TRUE(policy.is_ok());
  EXPECT_EQ(policy->specific, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(*read_model_name(dir_), "pets");

  expect_error(std::string(kValid) + "[instances]\ncount = 0\n", "'instances.count'");
  expect_error(std::string(kValid) + "[instances]\ncount = 1\ndevices = [0]\n", "'instances' takes count or devices");
  expect_error(std::string(kValid) + "[version_policy]\nlatest = 0\n", "'version_policy.latest'");
  expect_error(std::string(kValid) + "[version_policy]\nspecific = [0]\n", "'version_policy.specific'");
  expect_error(std::string(kValid) + "[version_policy]\nnewest = 2\n", "'version_policy.newest'");
}

// A version's files come from its own folder; model.toml from the model's.
TEST_F(ModelConfigTest, FilesOfAVersionComeFromItsFolder) {
  write("model.toml", kValid);
  const std::filesystem::path version = dir_ / "2";
  std::filesystem::create_directories(version);
  EXPECT_FALSE(load_model_config(dir_, version).is_ok()) << "2/ holds no model.onnx yet";
  std::ofstream(version / "model.onnx") << "x";
  std::ofstream(version / "labels.txt") << "a\nb\n";
  auto config = load_model_config(dir_, version);
  ASSERT_TRUE(config.is_ok()) << config.status().to_string();
  EXPECT_EQ(config->file, std::filesystem::absolute(version) / "model.onnx");
  EXPECT_EQ(config->labels.size(), 2u);
}

}  // namespace
}  // namespace tessera
