// The device registry: the table, `emu`, `xrt` without a board, `auto`'s choice and its note,
// unknown kinds, where the xclbin is looked for.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

#include "accel/device/device_registry.h"
#include "accel/device/xrt/xrt_backend.h"

namespace tessera {
namespace {

DeviceOptions options_of(std::string kind, std::string board = "zcu102") {
  DeviceOptions options;
  options.kind = std::move(kind);
  options.board = std::move(board);
  return options;
}

DeviceOptions options_with_xclbin(std::filesystem::path xclbin) {
  DeviceOptions options;
  options.xrt.xclbin = std::move(xclbin);
  return options;
}

bool board_present() {
  auto count = count_xrt_devices();
  return count.is_ok() && *count > 0;
}

// Sets TESSERA_XCLBIN for one test and restores it afterwards.
class ScopedXclbinEnv {
 public:
  explicit ScopedXclbinEnv(const char* value) {
    if (const char* v = std::getenv("TESSERA_XCLBIN")) saved_ = v;
    if (value != nullptr) {
      setenv("TESSERA_XCLBIN", value, 1);
    } else {
      unsetenv("TESSERA_XCLBIN");
    }
  }
  ~ScopedXclbinEnv() {
    if (saved_) {
      setenv("TESSERA_XCLBIN", saved_->c_str(), 1);
    } else {
      unsetenv("TESSERA_XCLBIN");
    }
  }

 private:
  std::optional<std::string> saved_;
};

TEST(DeviceRegistry, ListsAutoEmuAndXrtWithDescriptions) {
  const auto backends = device_backends();
  ASSERT_EQ(backends.size(), 3u);
  EXPECT_STREQ(backends[0].name, "auto");
  EXPECT_STREQ(backends[1].name, "emu");
  EXPECT_STREQ(backends[2].name, "xrt");
  for (const DeviceBackend& backend : backends) {
    EXPECT_NE(backend.factory, nullptr);
    EXPECT_GT(std::string(backend.description).size(), 10u) << backend.name;
  }
  EXPECT_EQ(device_kinds(), "auto, emu, xrt");
}

TEST(DeviceRegistry, UnknownKindListsTheKinds) {
  auto device = open_device(options_of("fpga"));
  ASSERT_FALSE(device.is_ok());
  EXPECT_EQ(device.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(device.status().message(), "unknown device kind 'fpga' (kinds: auto, emu, xrt)");
}

TEST(DeviceRegistry, EmuOpensWithTheBoardAndANote) {
  std::string note;
  auto device = open_device(options_of("emu", "zcu104"), &note);
  ASSERT_TRUE(device.is_ok()) << device.status().to_string();
  EXPECT_EQ((*device)->info().kind, "emu");
  EXPECT_EQ((*device)->info().board, "zcu104");
  EXPECT_EQ(note.rfind("device emu: ", 0), 0u) << note;
}

TEST(DeviceRegistry, XrtWithoutABoardFailsClearly) {
  if (!xrt_backend_built()) GTEST_SKIP() << "built without XRT: XrtOnABuildWithoutXrtSaysHowToGetIt covers it";
  if (board_present()) GTEST_SKIP() << "a Xilinx device is present";
  std::string note = "untouched";
  auto device = open_device(options_of("xrt"), &note);
  ASSERT_FALSE(device.is_ok());
  EXPECT_EQ(device.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(
      device.status().message().rfind("--device xrt: no Xilinx device found (xrt::system::enumerate_devices() = 0)", 0),
      0u)
      << device.status().message();
}

TEST(DeviceRegistry, XrtOnABuildWithoutXrtSaysHowToGetIt) {
  if (xrt_backend_built()) GTEST_SKIP() << "built with XRT: XrtWithoutABoardFailsClearly covers it";
  auto device = open_device(options_of("xrt"));
  ASSERT_FALSE(device.is_ok());
  EXPECT_EQ(device.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(device.status().message(), std::string("--device xrt: ") + kXrtNotBuiltMessage);
  std::string note;
  auto fallback = open_device(options_of("auto"), &note);
  ASSERT_TRUE(fallback.is_ok()) << fallback.status().to_string();
  EXPECT_EQ(note, "device auto: built without XRT, using the emulator");
}

TEST(DeviceRegistry, AutoFallsBackToTheEmulatorAndSaysWhy) {
  if (!xrt_backend_built()) GTEST_SKIP() << "built without XRT: XrtOnABuildWithoutXrtSaysHowToGetIt covers it";
  if (board_present()) GTEST_SKIP() << "a Xilinx device is present: auto would pick it when an xclbin is there";
  std::string note;
  auto device = open_device({}, &note);
  ASSERT_TRUE(device.is_ok()) << device.status().to_string();
  EXPECT_EQ((*device)->info().kind, "emu");
  EXPECT_EQ((*device)->info().board, "zcu102");
  EXPECT_EQ(note, "device auto: no Xilinx device found, using the emulator");
}

TEST(DeviceRegistry, ResolvesTheXclbinFromOptionsThenEnvironment) {
  {
    const ScopedXclbinEnv env("/from/env.xclbin");
    EXPECT_EQ(resolve_xclbin(options_with_xclbin("/given.xclbin").xrt), "/given.xclbin");
    EXPECT_EQ(resolve_xclbin({}), "/from/env.xclbin");
  }
  const ScopedXclbinEnv unset(nullptr);
  const std::filesystem::path found = resolve_xclbin({});
  if (found.empty()) return;  // no default install on this machine
  EXPECT_TRUE(found == kDefaultXclbinPaths[0] || found == kDefaultXclbinPaths[1]) << found;
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

TEST(DeviceRegistry, DeviceListsAreAllOrDistinctIndices) {
  EXPECT_FALSE(parse_device_list("all")->has_value());
  EXPECT_EQ(**parse_device_list("0,2,1"), (std::vector<unsigned>{0, 2, 1}));
  for (const char* bad : {"", "0,", ",1", "a", "1,1", "-1"}) {
    auto parsed = parse_device_list(bad);
    ASSERT_FALSE(parsed.is_ok()) << bad;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(DeviceRegistry, EmulatorInstancesSplitTheThreadsAndTakeTheirOwnFaults) {
  DeviceOptions options;
  options.kind = "emu";
  options.devices = "0,1";
  options.emu.faults = "instance=1,fail-run=1";
  std::string note;
  auto devices = open_devices(options, &note);
  ASSERT_TRUE(devices.is_ok()) << devices.status().to_string();
  ASSERT_EQ(devices->size(), 2u);
  EXPECT_EQ((*devices)[0].index, 0u);
  EXPECT_EQ((*devices)[1].index, 1u);
  const std::string first = note.substr(0, note.find('\n'));
  const std::string second = note.substr(note.find('\n') + 1);
  EXPECT_EQ(first.find("[device 0] device emu: emulator ("), 0u) << note;
  EXPECT_EQ(second.find("[device 1] device emu: emulator ("), 0u) << note;
  EXPECT_EQ(first.find("injected faults"), std::string::npos) << "only instance 1 has the faults: " << note;
  EXPECT_NE(second.find("injected faults: instance=1,fail-run=1"), std::string::npos) << note;
}

}  // namespace
}  // namespace tessera
