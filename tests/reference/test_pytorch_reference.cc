// Tessera's float32 reference path against PyTorch on the torchvision zoo (seeded random weights)
// and on the bundled Fashion-MNIST model over all 10,000 test images.
//
// Error measure: max_i |tessera_i - torch_i| / max_j |torch_j| per output tensor — relative to
// the output's scale, since element-wise relative error is meaningless for logits near zero.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "accel/host/reference_executor.h"
#include "accel/import/onnx/onnx_importer.h"
#include "accel/runtime/engine.h"
#include "tests/reference/zoo_data.h"

namespace tessera {
namespace {

using testing::kZoo;
using testing::read_json;
using testing::read_raw;
constexpr double kMaxRelativeError = 1e-4;

double relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  double scale = 0, worst = 0;
  for (float w : want) scale = std::max(scale, static_cast<double>(std::fabs(w)));
  for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - want[i]));
  return worst / std::max(scale, 1e-12);
}

class ZooModel : public ::testing::TestWithParam<std::string> {};

TEST_P(ZooModel, MatchesPyTorch) {
  const auto dir = kZoo / GetParam();
  const nlohmann::json meta = read_json(dir / "meta.json");
  ASSERT_FALSE(meta.is_null());
  auto graph = import_onnx_file(dir / "model.onnx");
  ASSERT_TRUE(graph.is_ok()) << graph.status().to_string();

  Tensor input(meta["input_shape"].get<Shape>(), read_raw<float>(dir / "input.f32"));
  const std::vector<float> want = read_raw<float>(dir / "output.f32");
  ASSERT_EQ(input.elements(), shape_elements(input.shape));

  auto outputs = host::run_reference(*graph, {{graph->inputs[0].name, input}});
  ASSERT_TRUE(outputs.is_ok()) << outputs.status().to_string();
  const Tensor& got = outputs->at(graph->outputs[0].name);
  EXPECT_EQ(got.shape, meta["output_shape"].get<Shape>());
  ASSERT_EQ(got.data.size(), want.size());
  const double err = relative_error(got.data, want);
  std::printf("[ zoo ] %-14s max relative error vs PyTorch: %.3g\n", GetParam().c_str(), err);
  RecordProperty("max_relative_error", std::to_string(err));
  EXPECT_LE(err, kMaxRelativeError);
}

INSTANTIATE_TEST_SUITE_P(Torchvision, ZooModel,
                         ::testing::Values("squeezenet1_1", "resnet18", "googlenet", "mobilenet_v2", "alexnet"));

// The bundled model through the Engine (model.toml, import, signature checks) on all 10,000
// Fashion-MNIST test images: top-1 identical to PyTorch's on every image.
TEST(BundledModel, TopOneIdenticalToPyTorchOnAllTestImages) {
  const auto dir = kZoo / "fashion-mnist";
  const nlohmann::json meta = read_json(dir / "meta.json");
  ASSERT_FALSE(meta.is_null());
  const auto images = read_raw<uint8_t>(dir / "test_images.u8");
  const auto labels = read_raw<uint8_t>(dir / "test_labels.u8");
  const auto logits = read_raw<float>(dir / "logits.f32");
  const size_t count = meta["count"].get<size_t>();
  ASSERT_EQ(images.size(), count * 28 * 28);
  ASSERT_EQ(labels.size(), count);
  ASSERT_EQ(logits.size(), count * 10);

  auto config = load_model_config(std::filesystem::path(TESSERA_SOURCE_DIR) / "models/fashion-mnist");
  ASSERT_TRUE(config.is_ok()) << config.status().to_string();
  auto engine = Engine::load(*config);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();

  const PreprocessConfig& in = (*engine)->config().input;
  constexpr size_t kBatch = 250;
  size_t same_top1 = 0, correct = 0;
  double worst = 0;
  for (size_t start = 0; start < count; start += kBatch) {
    const size_t n = std::min(kBatch, count - start);
    Tensor batch({static_cast<int64_t>(n), 1, 28, 28});
    for (size_t i = 0; i < n * 28 * 28; ++i) {
      batch.data[i] = (images[start * 28 * 28 + i] / in.scale - in.mean[0]) / in.std[0];
    }
    auto rows = (*engine)->run(batch);
    ASSERT_TRUE(rows.is_ok()) << rows.status().to_string();
    for (size_t i = 0; i < n; ++i) {
      const auto& got = (*rows)[i];
      std::vector<float> want(logits.begin() + static_cast<std::ptrdiff_t>((start + i) * 10),
                              logits.begin() + static_cast<std::ptrdiff_t>((start + i + 1) * 10));
      worst = std::max(worst, relative_error(got, want));
      const auto ours = std::max_element(got.begin(), got.end()) - got.begin();
      const auto theirs = std::max_element(want.begin(), want.end()) - want.begin();
      same_top1 += ours == theirs;
      correct += ours == labels[start + i];
    }
  }
  const double accuracy = 100.0 * static_cast<double>(correct) / static_cast<double>(count);
  std::printf(
      "[ bundled ] top-1 identical to PyTorch on %zu/%zu images; top-1 accuracy %.2f%%; "
      "max relative logit error %.3g\n",
      same_top1, count, accuracy, worst);
  EXPECT_EQ(same_top1, count);
  EXPECT_LE(worst, kMaxRelativeError);
  EXPECT_GE(accuracy, 90.0);
}

}  // namespace
}  // namespace tessera
