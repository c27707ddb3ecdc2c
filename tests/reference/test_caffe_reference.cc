// Caffe models against an independent reader: tools/make_caffe_zoo.py writes Caffe networks
// (the CaffePresso table-1 nets, Caffe's CIFAR-10 quick net, layer-coverage nets, and ONNX models
// converted by tools/onnx2caffe.py) with OpenCV DNN's outputs (cv2.dnn.readNetFromCaffe).
// Tessera's Caffe import must match OpenCV and, for converted models, its own ONNX import; the
// int8 path must run them; and the bundled model's Caffe copy must classify all 10,000
// Fashion-MNIST test images as the ONNX original does.
//
// Error measure (as in test_pytorch_reference.cc): max |tessera - reference| / max |reference|.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "accel/device/device_registry.h"
#include "accel/host/reference_executor.h"
#include "accel/image/preprocess.h"
#include "accel/import/caffe/caffe_importer.h"
#include "accel/import/onnx/onnx_importer.h"
#include "accel/runtime/engine.h"
#include "tests/common/model_folder_files.h"
#include "tests/reference/zoo_data.h"

namespace tessera {
namespace {

using testing::read_json;
using testing::read_raw;
const std::filesystem::path kCaffeZoo = TESSERA_CAFFE_ZOO_DIR;
constexpr double kMaxRelativeError = 1e-4;

double relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  double scale = 0, worst = 0;
  for (float w : want) scale = std::max(scale, static_cast<double>(std::fabs(w)));
  for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - want[i]));
  return worst / std::max(scale, 1e-12);
}

// NOLINTNEXTLINE(bugprone-exception-escape): json's noexcept move calls assert_invariant, unprovable to tidy
struct CaffeNet {
  nlohmann::json meta;
  Graph graph;
  Tensor input;
};

// The net's files, imported; a test failure when anything is missing.
bool load(const std::string& name, CaffeNet& net) {
  const auto dir = kCaffeZoo / name;
  net.meta = read_json(dir / "meta.json");
  if (net.meta.is_null()) return false;
  auto graph = import_caffe_files(dir / "deploy.prototxt", dir / "model.caffemodel");
  EXPECT_TRUE(graph.is_ok()) << graph.status().to_string();
  if (!graph) return false;
  net.graph = std::move(graph).value();
  net.input = Tensor(net.meta["input_shape"].get<Shape>(), read_raw<float>(dir / "input.f32"));
  EXPECT_EQ(net.input.elements(), shape_elements(net.input.shape));
  return net.input.elements() == shape_elements(net.input.shape);
}

Result<Tensor> run(const Graph& graph, const Tensor& input) {
  TESSERA_ASSIGN_OR_RETURN(auto outputs, host::run_reference(graph, {{graph.inputs[0].name, input}}));
  return outputs.at(graph.outputs[0].name);
}

const std::vector<std::string> kGenerated = {
    "caffepresso_mnist", "caffepresso_cifar10", "caffepresso_stl10", "caffepresso_caltech101",
    "cifar10_quick",     "legacy_v1",           "layer_zoo",         "ip_axis"};
const std::vector<std::string> kConverted = {"fashion-mnist", "squeezenet1_1", "resnet18", "googlenet", "alexnet"};

class CaffeVsOpenCV : public ::testing::TestWithParam<std::string> {};

TEST_P(CaffeVsOpenCV, Fp32MatchesOpenCV) {
  CaffeNet net;
  ASSERT_TRUE(load(GetParam(), net));
  const std::vector<float> want = read_raw<float>(kCaffeZoo / GetParam() / "opencv.f32");
  auto got = run(net.graph, net.input);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_EQ(got->shape, net.meta["output_shape"].get<Shape>());
  ASSERT_EQ(got->data.size(), want.size());
  const double err = relative_error(got->data, want);
  std::printf("[ caffe ] %-24s max relative error vs OpenCV %s: %.3g  (layers: %s)\n", GetParam().c_str(),
              net.meta["opencv"].get<std::string>().c_str(), err, net.meta["layer_types"].dump().c_str());
  RecordProperty("max_relative_error_opencv", std::to_string(err));
  EXPECT_LE(err, kMaxRelativeError);
}

INSTANTIATE_TEST_SUITE_P(Generated, CaffeVsOpenCV, ::testing::ValuesIn(kGenerated));
INSTANTIATE_TEST_SUITE_P(Converted, CaffeVsOpenCV, ::testing::ValuesIn(kConverted));

// A converted model: its Caffe import computes what its ONNX import computes.
class CaffeVsOnnx : public ::testing::TestWithParam<std::string> {};

TEST_P(CaffeVsOnnx, Fp32MatchesOnnxImport) {
  CaffeNet net;
  ASSERT_TRUE(load(GetParam(), net));
  ASSERT_TRUE(net.meta.contains("onnx"));
  auto onnx = import_onnx_file(net.meta["onnx"].get<std::string>());
  ASSERT_TRUE(onnx.is_ok()) << onnx.status().to_string();
  auto want = run(*onnx, net.input);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  auto got = run(net.graph, net.input);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  ASSERT_EQ(got->shape, want->shape);
  const double err = relative_error(got->data, want->data);
  std::printf("[ caffe ] %-24s max relative error vs the ONNX import: %.3g (%zu Caffe IR nodes, %zu ONNX)\n",
              GetParam().c_str(), err, net.graph.nodes.size(), onnx->nodes.size());
  RecordProperty("max_relative_error_onnx", std::to_string(err));
  EXPECT_LE(err, kMaxRelativeError);
}

INSTANTIATE_TEST_SUITE_P(Converted, CaffeVsOnnx, ::testing::ValuesIn(kConverted));

std::shared_ptr<Device> emulator() {
  DeviceOptions options;
  options.kind = "emu";
  auto device = open_device(options);
  EXPECT_TRUE(device.is_ok()) << device.status().to_string();
  return std::move(device).value();
}

// A model folder in a temp dir for a generated net: format = "caffe", its files linked in.
std::filesystem::path model_folder(const std::string& name, const Shape& input, int64_t classes) {
  const auto dir = kCaffeZoo / name;
  auto model_dir = std::filesystem::temp_directory_path() / ("tessera-caffe-int8-" + name);
  std::filesystem::create_directories(model_dir);
  for (const char* file : {"deploy.prototxt", "model.caffemodel"}) {
    testing::place_in_model_folder(dir / file, model_dir, file);
  }
  std::ofstream(model_dir / "model.toml")
      << "name = \"" << name << "\"\nformat = \"caffe\"\nfile = \"deploy.prototxt\"\nweights = \"model.caffemodel\""
      << "\nlabels = \"labels.txt\"\n[input]\nwidth = " << input[3] << "\nheight = " << input[2]
      << "\nchannels = " << input[1] << "\nscale = 1.0\n"
      << (input[1] == 3 ? "channel_order = \"bgr\"\n" : "");
  std::ofstream labels(model_dir / "labels.txt");
  for (int64_t i = 0; i < classes; ++i) labels << "class" << i << "\n";
  return model_dir;
}

// The int8 path (emulated fabric + host) on the Caffe nets, calibrated on the test input: its
// scores agree with the float path's (random weights: agreement, not accuracy, is meaningful).
class CaffeInt8 : public ::testing::TestWithParam<std::string> {};

TEST_P(CaffeInt8, Int8AgreesWithFp32) {
  CaffeNet net;
  ASSERT_TRUE(load(GetParam(), net));
  const Shape out_shape = net.meta["output_shape"].get<Shape>();
  const auto model_dir = model_folder(GetParam(), net.input.shape, out_shape[1]);
  auto config = load_model_config(model_dir);
  ASSERT_TRUE(config.is_ok()) << config.status().to_string();
  auto fp32 = Engine::load(*config);
  ASSERT_TRUE(fp32.is_ok()) << fp32.status().to_string();
  EngineOptions options;
  options.precision = Precision::kInt8;
  options.device = emulator();
  options.calibration_samples = {net.input};
  auto int8 = Engine::load(*config, options);
  ASSERT_TRUE(int8.is_ok()) << int8.status().to_string();
  auto want = (*fp32)->run(net.input);
  auto got = (*int8)->run(net.input);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  double dot = 0, nw = 0, ng = 0;
  size_t same_top1 = 0;
  for (size_t i = 0; i < got->size(); ++i) {
    const auto& g = (*got)[i];
    const auto& w = (*want)[i];
    for (size_t k = 0; k < g.size(); ++k) {
      dot += static_cast<double>(g[k]) * w[k];
      nw += static_cast<double>(w[k]) * w[k];
      ng += static_cast<double>(g[k]) * g[k];
    }
    same_top1 += std::max_element(g.begin(), g.end()) - g.begin() == std::max_element(w.begin(), w.end()) - w.begin();
  }
  const double cosine = dot / std::sqrt(nw * ng);
  std::printf("[ caffe int8 ] %-24s cosine(int8, fp32) = %.4f, top-1 agreement %zu/%zu; %s\n", GetParam().c_str(),
              cosine, same_top1, got->size(), (*int8)->summary().c_str());
  EXPECT_GE(cosine, 0.95);
  std::filesystem::remove_all(model_dir);
}

INSTANTIATE_TEST_SUITE_P(Generated, CaffeInt8, ::testing::ValuesIn(kGenerated));

// The bundled model's Caffe copy (models/caffe/fashion-mnist) through the Engine on all 10,000
// test images: the same top-1 as the ONNX original's PyTorch logits on every image, fp32; int8
// within half a point of fp32.
TEST(BundledCaffeModel, SameTopOneAsOnnxOriginalOnAllTestImages) {
  const std::filesystem::path zoo = TESSERA_ZOO_DIR;
  const auto images = read_raw<uint8_t>(zoo / "fashion-mnist/test_images.u8");
  const auto labels = read_raw<uint8_t>(zoo / "fashion-mnist/test_labels.u8");
  const auto logits = read_raw<float>(zoo / "fashion-mnist/logits.f32");
  const size_t count = labels.size();
  ASSERT_EQ(images.size(), count * 784);
  ASSERT_EQ(logits.size(), count * 10);
  auto config = load_model_config(std::filesystem::path(TESSERA_SOURCE_DIR) / "models/caffe/fashion-mnist");
  ASSERT_TRUE(config.is_ok()) << config.status().to_string();
  ASSERT_EQ(config->format, "caffe");
  auto fp32 = Engine::load(*config);
  ASSERT_TRUE(fp32.is_ok()) << fp32.status().to_string();
  EngineOptions options;
  options.precision = Precision::kInt8;
  options.device = emulator();
  auto int8 = Engine::load(*config, options);
  ASSERT_TRUE(int8.is_ok()) << int8.status().to_string();

  // Logits: the dataset's pixels normalised by model.toml's [input] in Caffe's 0-255 units, as
  // PyTorch's were in 0-1 units. Accuracy: through preprocess_into, as the daemon does
  // (tests/reference/test_int8_reference.cc measures the ONNX model the same way).
  const PreprocessConfig& in = config->input;
  size_t same_top1 = 0, correct32 = 0, correct8 = 0, correct_direct = 0;
  double worst = 0;
  constexpr size_t kBatch = 250;
  for (size_t first = 0; first < count; first += kBatch) {
    const size_t n = std::min(kBatch, count - first);
    Tensor direct({static_cast<int64_t>(n), 1, 28, 28});
    Tensor batch({static_cast<int64_t>(n), 1, 28, 28});
    for (size_t i = 0; i < n; ++i) {
      Image image{28, 28, 1, {}};
      image.pixels.assign(images.begin() + static_cast<std::ptrdiff_t>((first + i) * 784),
                          images.begin() + static_cast<std::ptrdiff_t>((first + i + 1) * 784));
      ASSERT_TRUE(preprocess_into(image, in, batch.ptr() + static_cast<int64_t>(i) * 784).is_ok());
      for (size_t j = 0; j < 784; ++j) {
        direct.data[i * 784 + j] = (image.pixels[j] / in.scale - in.mean[0]) / in.std[0];
      }
    }
    auto rows_direct = (*fp32)->run(direct);
    auto rows = (*fp32)->run(batch);
    auto rows8 = (*int8)->run(batch);
    ASSERT_TRUE(rows_direct.is_ok()) << rows_direct.status().to_string();
    ASSERT_TRUE(rows.is_ok()) << rows.status().to_string();
    ASSERT_TRUE(rows8.is_ok()) << rows8.status().to_string();
    for (size_t i = 0; i < n; ++i) {
      const auto& got = (*rows_direct)[i];
      std::vector<float> want(logits.begin() + static_cast<std::ptrdiff_t>((first + i) * 10),
                              logits.begin() + static_cast<std::ptrdiff_t>((first + i + 1) * 10));
      worst = std::max(worst, relative_error(got, want));
      const auto ours = std::max_element(got.begin(), got.end()) - got.begin();
      same_top1 += ours == std::max_element(want.begin(), want.end()) - want.begin();
      correct_direct += ours == labels[first + i];
      const auto& got32 = (*rows)[i];
      const auto& got8 = (*rows8)[i];
      correct32 += std::max_element(got32.begin(), got32.end()) - got32.begin() == labels[first + i];
      correct8 += std::max_element(got8.begin(), got8.end()) - got8.begin() == labels[first + i];
    }
  }
  const auto percent = [count](size_t k) { return 100.0 * static_cast<double>(k) / static_cast<double>(count); };
  std::printf(
      "[ caffe bundled ] top-1 identical to the ONNX model's PyTorch logits on %zu/%zu (top-1 %.2f%%), "
      "max relative logit error %.3g; through preprocessing: fp32 %.2f%%, int8 %.2f%%\n",
      same_top1, count, percent(correct_direct), worst, percent(correct32), percent(correct8));
  EXPECT_EQ(same_top1, count);
  EXPECT_LE(worst, kMaxRelativeError);
  EXPECT_GE(percent(correct32), 90.0);
  EXPECT_GE(percent(correct8), percent(correct32) - 0.5);
}

}  // namespace
}  // namespace tessera
