// The XRT backend on a machine with or without a board: the XILINX_XRT prefix, clear errors
// instead of exceptions, descriptor validation. Tests that need a board skip with the reason.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "accel/device/device_registry.h"
#include "accel/device/emu/emu_device.h"
#include "accel/device/xrt/xrt_device.h"
#include "accel/device/xrt/xrt_env.h"
#include "accel/device/xrt/xrt_program.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

// A fresh directory per test, removed afterwards.
class XrtTempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tessera-xrt-test-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

// Restores XILINX_XRT after a test that unsets it.
class XrtEnvTest : public XrtTempDir {
 protected:
  void SetUp() override {
    XrtTempDir::SetUp();
    if (const char* v = std::getenv("XILINX_XRT")) saved_ = v;
  }
  void TearDown() override {
    if (saved_) setenv("XILINX_XRT", saved_->c_str(), 1);
    XrtTempDir::TearDown();
  }
  std::optional<std::string> saved_;
};

TEST_F(XrtEnvTest, EnsureCreatesPrefixWithXrtLibraries) {
  unsetenv("XILINX_XRT");
  ASSERT_TRUE(ensure_xilinx_xrt_env().is_ok()) << ensure_xilinx_xrt_env().to_string();
  const char* prefix = std::getenv("XILINX_XRT");
  ASSERT_NE(prefix, nullptr);
  const fs::path lib = fs::path(prefix) / "lib";
  EXPECT_TRUE(fs::is_symlink(lib)) << lib;
  EXPECT_TRUE(fs::exists(lib / "libxrt_coreutil.so") || fs::exists(lib / "libxrt_coreutil.so.2")) << lib;
  EXPECT_TRUE(fs::exists(lib / "libxrt_core.so.2")) << lib;
  // Idempotent: a second call keeps the same prefix.
  ASSERT_TRUE(ensure_xilinx_xrt_env().is_ok());
  EXPECT_EQ(std::string(std::getenv("XILINX_XRT")), std::string(prefix));
}

TEST_F(XrtEnvTest, EnsureLeavesAnExistingSettingAlone) {
  setenv("XILINX_XRT", "/opt/xilinx/xrt", 1);
  ASSERT_TRUE(ensure_xilinx_xrt_env().is_ok());
  EXPECT_EQ(std::string(std::getenv("XILINX_XRT")), "/opt/xilinx/xrt");
}

TEST_F(XrtTempDir, XrtLibraryDirHoldsTheShim) {
  auto dir = xrt_library_dir();
  ASSERT_TRUE(dir.is_ok()) << dir.status().to_string();
  EXPECT_TRUE(fs::exists(*dir / "libxrt_core.so.2")) << *dir;
}

TEST_F(XrtTempDir, MakeXrtPrefixIsIdempotentAndReplacesAStaleLink) {
  const fs::path lib_a = dir_ / "a", lib_b = dir_ / "b";
  fs::create_directories(lib_a);
  fs::create_directories(lib_b);
  auto first = make_xrt_prefix(dir_, lib_a);
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  EXPECT_EQ(fs::read_symlink(*first / "lib"), lib_a);
  auto again = make_xrt_prefix(dir_, lib_a);
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(*again, *first);
  auto moved = make_xrt_prefix(dir_, lib_b);
  ASSERT_TRUE(moved.is_ok());
  EXPECT_EQ(fs::read_symlink(*moved / "lib"), lib_b);
  // No temporary links left behind.
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(*first)) ++entries;
  EXPECT_EQ(entries, 1);
}

TEST_F(XrtTempDir, MakeXrtPrefixRefusesAPlantedOrSharedPrefix) {
  const fs::path prefix = dir_ / ("tessera-xrt-" + std::to_string(geteuid()));
  fs::create_directories(dir_ / "elsewhere");
  fs::create_directory_symlink(dir_ / "elsewhere", prefix);
  auto planted = make_xrt_prefix(dir_, "/usr/lib");
  ASSERT_FALSE(planted.is_ok());
  EXPECT_EQ(planted.status().code(), StatusCode::kFailedPrecondition);
  fs::remove(prefix);
  fs::create_directories(prefix);
  chmod(prefix.c_str(), 0777);
  auto shared = make_xrt_prefix(dir_, "/usr/lib");
  ASSERT_FALSE(shared.is_ok());
  EXPECT_NE(shared.status().message().find("writable only by it"), std::string::npos) << shared.status().message();
}

TEST(XrtDevice, CountingDevicesNeverThrows) {
  auto count = xrt_device_count();
  ASSERT_TRUE(count.is_ok()) << count.status().to_string();
}

TEST(XrtDevice, OpenWithoutABoardFailsClearly) {
  auto count = xrt_device_count();
  if (count.is_ok() && *count > 0) GTEST_SKIP() << "a Xilinx device is present (" << *count << ")";
  auto device = XrtDevice::open({.index = 0, .xclbin = "", .board = "aws-f1", .compute_unit = ""});
  ASSERT_FALSE(device.is_ok());
  EXPECT_EQ(device.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(device.status().message().find("no Xilinx device found (xrt::system::enumerate_devices() = 0)"),
            std::string::npos)
      << device.status().message();
}

TEST_F(XrtTempDir, OpenWithAMissingXclbinNamesThePath) {
  const fs::path missing = dir_ / "missing.xclbin";
  auto device = XrtDevice::open({.index = 0, .xclbin = missing, .board = "zcu102", .compute_unit = ""});
  ASSERT_FALSE(device.is_ok());
  EXPECT_NE(device.status().message().find("xclbin not found: " + missing.string()), std::string::npos)
      << device.status().message();
}

TEST_F(XrtTempDir, OpenWithAFileThatIsNoXclbinSaysSo) {
  const fs::path bogus = dir_ / "bogus.xclbin";
  std::ofstream(bogus) << "not an xclbin";
  auto device = XrtDevice::open({.index = 0, .xclbin = bogus, .board = "zcu102", .compute_unit = ""});
  ASSERT_FALSE(device.is_ok());
  EXPECT_NE(device.status().message().find(bogus.string() + " is not an xclbin"), std::string::npos)
      << device.status().message();
}

// One 3x3 conv layer, 8 -> 8 channels on 8x8, that fits the synthesised limits.
CompiledProgram one_conv_program() {
  CompiledProgram p;
  abi::LayerDesc d{};
  d.op = abi::kOpConv;
  d.in_c = d.in_channels_total = 8;
  d.in_h = d.in_w = 8;
  d.out_c = d.out_channels_total = 8;
  d.out_h = d.out_w = d.conv_h = d.conv_w = 8;
  d.out_offset = 512;
  d.kernel_h = d.kernel_w = 3;
  d.stride_h = d.stride_w = d.dilation_h = d.dilation_w = d.groups = 1;
  d.pad_top = d.pad_left = 1;
  d.act_lo = -128;
  d.act_hi = 127;
  d.tile_m = d.tile_n = d.tile_r = d.tile_c = 8;
  p.layers = {d};
  p.weights.assign(8 * 8 * 9, 1);
  p.quant.resize(3 * 8);  // bias, multiplier, shift per output channel
  for (int c = 0; c < 8; ++c) {
    p.quant[c] = c * 100 - 400;
    p.quant[8 + c] = (1 << 20) + c * 4096;
    p.quant[16 + c] = 22 + c % 3;
  }
  p.header.arena_image_bytes = 1024;
  p.header.input_offset = 0;
  p.header.output_offset = 512;
  p.input_c = p.output_c = 8;
  p.input_h = p.input_w = p.output_h = p.output_w = 8;
  return p;
}

TEST(XrtProgram, ChecksEveryDescriptorAgainstTheAbi) {
  CompiledProgram p = one_conv_program();
  ASSERT_TRUE(check_program_for_device(p, 4).is_ok()) << check_program_for_device(p, 4).to_string();
  p.layers.push_back(p.layers[0]);
  p.layers[1].tile_m = abi::kMaxTileM + 1;
  const Status bad = check_program_for_device(p, 4);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("layer 1"), std::string::npos) << bad.message();
  EXPECT_EQ(check_program_for_device(one_conv_program(), 0).code(), StatusCode::kInvalidArgument);
  CompiledProgram outside = one_conv_program();
  outside.header.output_offset = 1000;
  EXPECT_EQ(check_program_for_device(outside, 1).code(), StatusCode::kInvalidArgument);
}

// On a board with an xclbin (TESSERA_XCLBIN or /opt/tessera): the fabric's bytes equal the
// emulator's, over two batch sizes so both ping-pong sets and the header rewrite are used.
// Under CTest's xrt_emu_unit_tests (TESSERA_XRT_EMU_LIB_DIR set) it runs on the software-emulated
// card (kernels/sw_emu/) and must not skip.
TEST(XrtDevice, MatchesTheEmulatorOnABoard) {
  auto count = xrt_device_count();
  if (std::getenv("TESSERA_XRT_EMU_LIB_DIR") != nullptr) {
    ASSERT_TRUE(count.is_ok() && *count > 0)
        << "the emulated XRT device is not there: " << (count.is_ok() ? "0 devices" : count.status().to_string());
  }
  if (!count.is_ok() || *count == 0) GTEST_SKIP() << "needs a Xilinx device: xrt::system::enumerate_devices() = 0";
  DeviceOptions options;
  options.kind = "xrt";
  if (resolve_xclbin(options.xrt).empty()) GTEST_SKIP() << "needs an xclbin: set TESSERA_XCLBIN";
  auto device = open_device(options);
  ASSERT_TRUE(device.is_ok()) << device.status().to_string();
  const CompiledProgram p = one_conv_program();
  auto fabric = (*device)->load(p, 4);
  ASSERT_TRUE(fabric.is_ok()) << fabric.status().to_string();
  EmuDevice emu;
  auto reference = emu.load(p, 4);
  ASSERT_TRUE(reference.is_ok()) << reference.status().to_string();
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(-128, 127);
  for (uint32_t batch : {4u, 1u, 3u}) {
    std::vector<int8_t> in(batch * p.input_bytes());
    for (auto& v : in) v = static_cast<int8_t>(byte(rng));
    std::vector<int8_t> got(batch * p.output_bytes()), want(got.size());
    ASSERT_TRUE((*fabric)->run(in, batch, got, std::chrono::seconds(5)).is_ok());
    ASSERT_TRUE((*reference)->run(in, batch, want, std::chrono::seconds(5)).is_ok());
    EXPECT_EQ(got, want) << "batch " << batch;
  }
}

}  // namespace
}  // namespace tessera
