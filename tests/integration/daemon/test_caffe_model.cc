// A Caffe model served, evaluated and planned like any model: the bundled model's Caffe copy
// (models/caffe/fashion-mnist, format = "caffe") in tesserad answers every image as the ONNX
// original does; `tessera eval` gives the same accuracy; `tessera plan` plans the same layers.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <regex>

#include "tests/integration/daemon_test.h"
#include "tests/integration/fmnist_images.h"
#include "tests/integration/subprocess.h"

namespace tessera::testing {
namespace {

const std::filesystem::path kModels = std::filesystem::path(TESSERA_SOURCE_DIR) / "models";
const std::filesystem::path kCaffeModels = kModels / "caffe";

TEST(CaffeModel, ServedByTesseradLikeTheOnnxOriginal) {
  const auto images = load_fmnist_images();
  ASSERT_FALSE(images.empty()) << "no images in " << TESSERA_FMNIST_DIR;
  TesseradProcess onnx({}, kModels);
  TesseradProcess caffe({}, kCaffeModels);
  ASSERT_TRUE(onnx.ok()) << onnx.error();
  ASSERT_TRUE(caffe.ok()) << caffe.error() << "\n" << caffe.log();
  EXPECT_EQ(caffe.models(), "fashion-mnist-caffe");
  auto onnx_stub = onnx.stub();
  auto caffe_stub = caffe.stub();
  size_t correct = 0;
  for (const FmnistImage& image : images) {
    const std::string png = read_binary(image.png);
    const GrpcAnswer want = classify_grpc(*onnx_stub, png, "", 3);
    const GrpcAnswer got = classify_grpc(*caffe_stub, png, "", 3);
    ASSERT_TRUE(want.status.ok()) << want.status.error_message();
    ASSERT_TRUE(got.status.ok()) << got.status.error_message() << "\n" << caffe.log();
    EXPECT_EQ(got.response.model(), "fashion-mnist-caffe");
    EXPECT_EQ(got.top1(), want.top1()) << image.stem;
    ASSERT_EQ(got.response.classes_size(), 3);
    EXPECT_NEAR(got.response.classes(0).score(), want.response.classes(0).score(), 1e-3) << image.stem;
    correct += got.top1() == image.label_name;
  }
  std::printf("[ caffe served ] %zu/%zu images right, every top-1 as the ONNX model's\n", correct, images.size());
  EXPECT_GE(correct, images.size() * 8 / 10);
}

// The "top-1: 92.04% (9204/10000)" line of `tessera eval`.
std::string eval_top1(const std::filesystem::path& model, const std::string& precision) {
  const ProcessOutput out = run_process(
      {TESSERA_CLI_PATH, "eval", "--model", model.string(), "--dataset", "fashion-mnist", "--precision", precision},
      milliseconds(300000));
  EXPECT_EQ(out.exit_status, 0) << out.err;
  std::smatch m;
  if (!std::regex_search(out.out, m, std::regex(R"(top-1: [0-9.]+% \([0-9]+/[0-9]+\))"))) {
    ADD_FAILURE() << "no top-1 line in: " << out.out << out.err;
    return "";
  }
  std::printf("[ caffe eval ] %s %s: %s\n", model.filename().string().c_str(), precision.c_str(), m.str().c_str());
  return m.str();
}

TEST(CaffeModel, EvalGivesTheOnnxOriginalsAccuracy) {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist")) {
    GTEST_SKIP() << "Fashion-MNIST is not installed in /usr/share/datasets/fashion-mnist (tools/setup.sh installs it)";
  }
  for (const std::string precision : {"fp32", "int8"}) {
    const std::string caffe = eval_top1(kCaffeModels / "fashion-mnist", precision);
    const std::string onnx = eval_top1(kModels / "fashion-mnist", precision);
    EXPECT_FALSE(caffe.empty());
    EXPECT_EQ(caffe, onnx) << precision;
  }
}

TEST(CaffeModel, PlannedLikeTheOnnxOriginal) {
  const auto plan = [](const std::filesystem::path& model) {
    const ProcessOutput out =
        run_process({TESSERA_CLI_PATH, "plan", model.string(), "--json", "--no-plan-cache"}, milliseconds(120000));
    EXPECT_EQ(out.exit_status, 0) << out.err;
    return out.exit_status == 0 ? nlohmann::json::parse(out.out) : nlohmann::json();
  };
  const nlohmann::json caffe = plan(kCaffeModels / "fashion-mnist");
  const nlohmann::json onnx = plan(kModels / "fashion-mnist");
  ASSERT_FALSE(caffe.is_null());
  ASSERT_FALSE(onnx.is_null());
  EXPECT_EQ(caffe["model"], "fashion-mnist-caffe");
  ASSERT_EQ(caffe["layers"].size(), 3u);
  ASSERT_EQ(caffe["layers"].size(), onnx["layers"].size());
  for (const char* key : {"bursts", "cycles", "ddr_bytes", "macs", "energy_uj", "images_per_second"}) {
    EXPECT_EQ(caffe["totals"][key], onnx["totals"][key]) << key;  // search and wall times vary
  }
}

}  // namespace
}  // namespace tessera::testing
