// The zoo networks (tools/make_zoo.py's torchvision exports) through the int8 engine on the xrt
// backend over the software-emulated XRT device (kernels/sw_emu/) and on the emulator: identical
// scores, bit for bit (the engine, plan and host stage are the same; only the device differs). The
// process must run on the emulated libxrt_coreutil (CTest's LD_LIBRARY_PATH) or the test FAILS.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "accel/device/device_registry.h"
#include "accel/runtime/engine.h"
#include "tests/common/model_folder_files.h"
#include "tests/reference/zoo_data.h"
#include "tests/xrt/xrt_emu_env.h"

namespace tessera {
namespace {

using testing::kZoo;
using testing::read_json;
using testing::read_raw;

std::shared_ptr<Device> open_kind(const std::string& kind) {
  DeviceOptions options;
  options.kind = kind;
  if (kind == "xrt") options.xrt.xclbin = std::filesystem::path(std::getenv("TESSERA_XRT_EMU_DIR")) / "zcu102.xclbin";
  auto device = open_device(options);
  EXPECT_TRUE(device.is_ok()) << device.status().to_string();
  return device.is_ok() ? std::shared_ptr<Device>(std::move(device).value()) : nullptr;
}

class XrtEmulatedZoo : public ::testing::TestWithParam<std::string> {};

TEST_P(XrtEmulatedZoo, ScoresEqualTheEmulators) {
  ASSERT_EQ(testing::emulated_xrt_problem(), "");
  const auto dir = kZoo / GetParam();
  const nlohmann::json meta = read_json(dir / "meta.json");
  ASSERT_FALSE(meta.is_null());
  const Tensor input(meta["input_shape"].get<Shape>(), read_raw<float>(dir / "input.f32"));
  const auto model_dir = std::filesystem::temp_directory_path() / ("tessera-xrt-zoo-" + GetParam());
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
  std::vector<std::vector<float>> scores[2];
  const char* kinds[2] = {"emu", "xrt"};
  for (int k = 0; k < 2; ++k) {
    EngineOptions options;
    options.precision = Precision::kInt8;
    options.device = open_kind(kinds[k]);
    ASSERT_NE(options.device, nullptr);
    options.calibration_samples = {input};
    options.device_timeout = std::chrono::minutes(10);
    auto engine = Engine::load(*config, options);
    ASSERT_TRUE(engine.is_ok()) << kinds[k] << ": " << engine.status().to_string();
    auto result = (*engine)->infer(input);
    ASSERT_TRUE(result.is_ok()) << kinds[k] << ": " << result.status().to_string();
    scores[k] = result->scores;
  }
  ASSERT_EQ(scores[0].size(), scores[1].size());
  for (size_t i = 0; i < scores[0].size(); ++i) {
    ASSERT_EQ(scores[0][i].size(), scores[1][i].size());
    EXPECT_EQ(std::memcmp(scores[0][i].data(), scores[1][i].data(), scores[0][i].size() * sizeof(float)), 0)
        << "image " << i;
  }
  std::filesystem::remove_all(model_dir);
}

INSTANTIATE_TEST_SUITE_P(Torchvision, XrtEmulatedZoo,
                         ::testing::Values("squeezenet1_1", "resnet18", "googlenet", "mobilenet_v2", "alexnet"));

}  // namespace
}  // namespace tessera
