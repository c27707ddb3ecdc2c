// The int8 path (quantiser + compiler + emulated fabric + host FC) against the float path:
// the bundled model's accuracy on all 10,000 Fashion-MNIST test images stays within 0.5 points
// of fp32, and the zoo models' int8 logits stay close to PyTorch's. The fp32 figure is PyTorch's
// (tools/make_zoo.py's meta.json): BundledModel.TopOneIdenticalToPyTorchOnAllTestImages holds
// Tessera's fp32 path to PyTorch's top-1 on every one of those images, so running that path again
// here would only double the test's time (most of it under qemu, where this test also runs).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "accel/device/device_registry.h"
#include "accel/graph/passes.h"
#include "accel/image/preprocess.h"
#include "accel/import/onnx/onnx_importer.h"
#include "accel/runtime/engine.h"
#include "tests/common/model_folder_files.h"
#include "tests/reference/zoo_data.h"

namespace tessera {
namespace {

using testing::kZoo;
using testing::read_json;
using testing::read_raw;

std::shared_ptr<Device> emulator() {
  DeviceOptions options;
  options.kind = "emu";
  auto device = open_device(options);
  EXPECT_TRUE(device.is_ok()) << device.status().to_string();
  return std::move(device).value();
}

double accuracy(const Engine& engine, const std::vector<uint8_t>& images, const std::vector<uint8_t>& labels) {
  const PreprocessConfig& in = engine.config().input;
  const size_t count = labels.size();
  constexpr size_t kBatch = 100;
  size_t correct = 0;
  for (size_t first = 0; first < count; first += kBatch) {
    const size_t n = std::min(kBatch, count - first);
    Tensor batch({static_cast<int64_t>(n), 1, 28, 28});
    for (size_t i = 0; i < n; ++i) {
      Image image{28, 28, 1, {}};
      image.pixels.assign(images.begin() + static_cast<std::ptrdiff_t>((first + i) * 784),
                          images.begin() + static_cast<std::ptrdiff_t>((first + i + 1) * 784));
      EXPECT_TRUE(preprocess_into(image, in, batch.ptr() + static_cast<int64_t>(i) * 784).is_ok());
    }
    auto result = engine.infer(batch);
    EXPECT_TRUE(result.is_ok()) << result.status().to_string();
    if (!result) return 0;
    for (size_t i = 0; i < n; ++i) {
      const auto& row = result->scores[i];
      correct += static_cast<size_t>(std::max_element(row.begin(), row.end()) - row.begin()) == labels[first + i];
    }
  }
  return 100.0 * static_cast<double>(correct) / static_cast<double>(count);
}

TEST(Int8BundledModel, AccuracyWithinHalfAPointOfFp32) {
  const nlohmann::json meta = read_json(kZoo / "fashion-mnist/meta.json");
  ASSERT_TRUE(meta.contains("top1_torch")) << "meta.json of the bundled model's zoo data lacks top1_torch";
  const double a32 = 100.0 * meta["top1_torch"].get<double>();
  const auto images = read_raw<uint8_t>(kZoo / "fashion-mnist/test_images.u8");
  const auto labels = read_raw<uint8_t>(kZoo / "fashion-mnist/test_labels.u8");
  ASSERT_EQ(images.size(), labels.size() * 784);
  auto config = load_model_config(std::filesystem::path(TESSERA_SOURCE_DIR) / "models/fashion-mnist");
  ASSERT_TRUE(config.is_ok()) << config.status().to_string();

  EngineOptions options;
  options.precision = Precision::kInt8;
  options.device = emulator();
  auto int8 = Engine::load(*config, options);
  ASSERT_TRUE(int8.is_ok()) << int8.status().to_string();
  std::printf("[ int8 ] %s\n", (*int8)->summary().c_str());

  const double a8 = accuracy(**int8, images, labels);
  std::printf("[ int8 ] fashion-mnist top-1: fp32 %.2f%% (PyTorch), int8 %.2f%% (emulated fabric)\n", a32, a8);
  EXPECT_GE(a8, a32 - 0.5);
  EXPECT_GE(a8, 90.0);
}

// Zoo models: int8 logits against PyTorch's float logits, calibrated on the test input itself
// (random weights and inputs: only agreement, not accuracy, is meaningful).
class Int8Zoo : public ::testing::TestWithParam<std::string> {};

TEST_P(Int8Zoo, LogitsCloseToPyTorch) {
  const auto dir = kZoo / GetParam();
  const nlohmann::json meta = read_json(dir / "meta.json");
  ASSERT_FALSE(meta.is_null());
  Tensor input(meta["input_shape"].get<Shape>(), read_raw<float>(dir / "input.f32"));
  const auto want = read_raw<float>(dir / "output.f32");

  // A model folder in a temp dir holding the zoo file (model.toml needs labels).
  const auto model_dir = std::filesystem::temp_directory_path() / ("tessera-int8-" + GetParam());
  std::filesystem::create_directories(model_dir);
  testing::place_in_model_folder(dir / "model.onnx", model_dir, "model.onnx");
  {
    std::ofstream(model_dir / "model.toml")
        << "name = \"" << GetParam()
        << "\"\nfile = \"model.onnx\"\nlabels = \"labels.txt\"\n[input]\nwidth = 224\nheight = 224\n"
           "channels = 3\n";
    std::ofstream labels(model_dir / "labels.txt");
    for (int i = 0; i < 1000; ++i) labels << "class" << i << "\n";
  }
  auto config = load_model_config(model_dir);
  ASSERT_TRUE(config.is_ok()) << config.status().to_string();
  EngineOptions options;
  options.precision = Precision::kInt8;
  options.device = emulator();
  options.calibration_samples = {input};
  auto engine = Engine::load(*config, options);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  auto result = (*engine)->infer(input);
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();

  double dot = 0, nw = 0, ng = 0;
  size_t same_top1 = 0;
  for (size_t i = 0; i < result->scores.size(); ++i) {
    const auto& got = result->scores[i];
    const float* w = want.data() + i * got.size();
    for (size_t k = 0; k < got.size(); ++k) {
      dot += static_cast<double>(got[k]) * w[k];
      nw += static_cast<double>(w[k]) * w[k];
      ng += static_cast<double>(got[k]) * got[k];
    }
    same_top1 += std::max_element(got.begin(), got.end()) - got.begin() == std::max_element(w, w + got.size()) - w;
  }
  const double cosine = dot / std::sqrt(nw * ng);
  std::printf("[ int8 ] %-14s cosine(int8, PyTorch fp32) = %.4f, top-1 agreement %zu/%zu; %s\n", GetParam().c_str(),
              cosine, same_top1, result->scores.size(), (*engine)->summary().c_str());
  EXPECT_GE(cosine, 0.95);
  std::filesystem::remove_all(model_dir);
}

INSTANTIATE_TEST_SUITE_P(Torchvision, Int8Zoo,
                         ::testing::Values("squeezenet1_1", "resnet18", "googlenet", "mobilenet_v2", "alexnet"));

}  // namespace
}  // namespace tessera
