// Every file model.toml names resolves inside the model's folder: absolute paths, ".." that
// leaves it and symbolic links that point out of it are refused with an error naming the key, so
// a model folder (and the repository's load API) cannot be turned into a reader of other files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "accel/runtime/model_config.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

class ModelConfigPathsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::temp_directory_path() /
            ("tessera-paths-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    dir_ = base_ / "model";
    fs::create_directories(dir_ / "calibration");
    write(dir_ / "model.onnx", "not parsed by load_model_config");
    write(dir_ / "labels.txt", "cat\ndog\n");
    // Beside the model folder, not in it: what a hostile model.toml would like to read.
    write(base_ / "secret.txt", "SECRET-1\nSECRET-2\n");
    fs::create_directories(base_ / "elsewhere");
  }
  void TearDown() override { fs::remove_all(base_); }

  static void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

  // model.toml with `file`, `labels` and, when given, a calibration folder.
  void write_toml(const std::string& file, const std::string& labels, const std::string& calibration = "") {
    std::string toml = "name = \"pets\"\nfile = \"" + file + "\"\nlabels = \"" + labels +
                       "\"\n[input]\nwidth = 2\nheight = 2\nchannels = 1\n";
    if (!calibration.empty()) toml += "[quantization]\ncalibration = \"" + calibration + "\"\n";
    write(dir_ / "model.toml", toml);
  }

  // load_model_config refuses, INVALID_ARGUMENT, naming `key` and saying `why`.
  void expect_refused(const std::string& key, const std::string& why, const fs::path& files_dir = {}) {
    auto config = load_model_config(dir_, files_dir);
    ASSERT_FALSE(config.is_ok()) << "accepted; labels " << (config.is_ok() ? config->labels.front() : "");
    EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument) << config.status().to_string();
    EXPECT_NE(config.status().message().find("'" + key + "'"), std::string::npos) << config.status().message();
    EXPECT_NE(config.status().message().find(why), std::string::npos) << config.status().message();
  }

  fs::path base_, dir_;
};

TEST_F(ModelConfigPathsTest, AbsolutePathsAreRefused) {
  write_toml("model.onnx", (base_ / "secret.txt").string());
  expect_refused("labels", "not the absolute path");
  write_toml("/etc/passwd", "labels.txt");
  expect_refused("file", "not the absolute path");
  write_toml("model.onnx", "labels.txt", (base_ / "elsewhere").string());
  expect_refused("quantization.calibration", "not the absolute path");
}

TEST_F(ModelConfigPathsTest, DotDotOutOfTheFolderIsRefused) {
  write_toml("model.onnx", "../secret.txt");
  expect_refused("labels", "outside the model folder");
  write_toml("calibration/../../secret.txt", "labels.txt");
  expect_refused("file", "outside the model folder");
  write_toml("model.onnx", "labels.txt", "../elsewhere");
  expect_refused("quantization.calibration", "outside the model folder");
}

TEST_F(ModelConfigPathsTest, SymbolicLinksOutOfTheFolderAreRefused) {
  fs::create_symlink(base_ / "secret.txt", dir_ / "stolen.txt");
  write_toml("model.onnx", "stolen.txt");
  expect_refused("labels", "outside the model folder");
  write_toml("stolen.txt", "labels.txt");
  expect_refused("file", "outside the model folder");
  // A linked folder on the way out counts too.
  fs::create_directory_symlink(base_, dir_ / "up");
  write_toml("model.onnx", "up/secret.txt");
  expect_refused("labels", "outside the model folder");
  write_toml("model.onnx", "labels.txt", "up/elsewhere");
  expect_refused("quantization.calibration", "outside the model folder");
}

// What stays inside is fine: ".." that does not leave the folder, links within it, and a
// version's folder reaching up to its model's shared files.
TEST_F(ModelConfigPathsTest, NamesThatStayInsideAreAccepted) {
  fs::create_symlink(dir_ / "labels.txt", dir_ / "labels-link.txt");
  write_toml("calibration/../model.onnx", "labels-link.txt", "./calibration");
  auto config = load_model_config(dir_);
  ASSERT_TRUE(config.is_ok()) << config.status().to_string();
  EXPECT_EQ(config->labels, (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(config->file, fs::canonical(dir_ / "model.onnx"));
  EXPECT_EQ(config->quantization.calibration_dir, fs::canonical(dir_ / "calibration"));

  const fs::path version = dir_ / "3";
  fs::create_directories(version);
  write(version / "model.onnx", "x");
  write_toml("model.onnx", "../labels.txt");
  config = load_model_config(dir_, version);
  ASSERT_TRUE(config.is_ok()) << config.status().to_string();
  EXPECT_EQ(config->file, fs::canonical(version / "model.onnx"));
  EXPECT_EQ(config->labels.size(), 2u);
  // ... but not past the model folder.
  write_toml("model.onnx", "../../secret.txt");
  expect_refused("labels", "outside the model folder", version);
}

// Only regular files are read: a folder or a device named as a file is an error, not a read.
TEST_F(ModelConfigPathsTest, NamesThatAreNotFilesAreRefused) {
  write_toml("model.onnx", "calibration");
  expect_refused("labels", "not a regular file");
  write_toml("calibration", "labels.txt");
  expect_refused("file", "not a regular file");
}

}  // namespace
}  // namespace tessera
