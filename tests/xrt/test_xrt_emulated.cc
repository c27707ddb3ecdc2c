// The xrt backend (accel/device/xrt/) end to end on the software-emulated XRT device
// (kernels/sw_emu/): the backend's own code opens the card, reads the xclbin, allocates and syncs
// buffers in the banks the xclbin connects, starts runs and waits with timeouts, and the HLS
// kernel behind XRT's API computes. Every test first checks that this process loaded the
// emulated libxrt_coreutil (CTest sets LD_LIBRARY_PATH) and FAILS otherwise.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "accel/device/device_registry.h"
#include "accel/device/emu/emu_device.h"
#include "accel/device/xrt/xrt_device.h"
#include "accel/device/xrt/xrt_env.h"
#include "tests/bitexact/random_programs.h"
#include "tests/xrt/xrt_emu_env.h"

namespace tessera::testing {
namespace {

namespace fs = std::filesystem;
using bitexact::BitexactCase;
using bitexact::CaseGenerator;

constexpr auto kTimeout = std::chrono::seconds(60);

fs::path emu_xclbin(const std::string& board) {
  const char* dir = std::getenv("TESSERA_XRT_EMU_DIR");
  return fs::path(dir == nullptr ? "" : dir) / (board + ".xclbin");
}

// Card `index` with the emulated xclbin of `board`'s layout, through XrtDevice::open.
std::unique_ptr<Device> open(const std::string& board = "zcu102", unsigned index = 0) {
  auto device = XrtDevice::open({.index = index, .xclbin = emu_xclbin(board), .board = board, .compute_unit = ""});
  EXPECT_TRUE(device.is_ok()) << device.status().to_string();
  return device.is_ok() ? std::move(device).value() : nullptr;
}

class EmulatedXrt : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(emulated_xrt_problem(), "");
    ASSERT_EQ(reset_emulated_xrt(), 1);
  }
  void TearDown() override { reset_emulated_xrt(); }
};

// The whole per-image arena as the program's input and output, so a run through Device::run
// compares every byte a layer may write, as the emulator's bit-exactness test does.
CompiledProgram whole_arena_io(CompiledProgram p) {
  p.header.input_offset = p.header.output_offset = 0;
  p.input_c = p.output_c = p.header.arena_image_bytes;
  p.input_h = p.input_w = p.output_h = p.output_w = 1;
  return p;
}

std::vector<int8_t> run_on(Device& device, const CompiledProgram& p, uint32_t batch, const std::vector<int8_t>& in) {
  auto program = device.load(p, batch);
  EXPECT_TRUE(program.is_ok()) << program.status().to_string();
  if (!program.is_ok()) return {};
  std::vector<int8_t> out(size_t{batch} * p.output_bytes());
  const Status status = (*program)->run(in, batch, out, kTimeout);
  EXPECT_TRUE(status.is_ok()) << status.to_string();
  return out;
}

// `count` random cases of one mode through the xrt backend and the emulator: identical bytes.
void expect_cases_match(uint64_t salt, BitexactCase (CaseGenerator::*make)(), int count) {
  auto xrt = open();
  ASSERT_NE(xrt, nullptr);
  EmuDevice emu;
  CaseGenerator generator(20240611u ^ salt);
  for (int i = 0; i < count; ++i) {
    const BitexactCase c = (generator.*make)();
    const CompiledProgram p = whole_arena_io(c.program);
    const std::vector<int8_t> fabric = run_on(*xrt, p, c.batch, c.arena);
    const std::vector<int8_t> reference = run_on(emu, p, c.batch, c.arena);
    ASSERT_EQ(fabric.size(), reference.size());
    ASSERT_TRUE(fabric == reference) << "case " << i << ": " << c.name;
  }
}

TEST_F(EmulatedXrt, TheProcessRunsOnTheEmulationThroughXilinxXrt) {
  // ensure_xilinx_xrt_env() made the prefix whose lib/ is the directory the (emulated)
  // libxrt_coreutil came from; the emulation loaded its device side from there.
  ASSERT_TRUE(ensure_xilinx_xrt_env().is_ok());
  const char* prefix = std::getenv("XILINX_XRT");
  ASSERT_NE(prefix, nullptr);
  EXPECT_TRUE(fs::equivalent(fs::path(prefix) / "lib", std::getenv("TESSERA_XRT_EMU_LIB_DIR"))) << prefix;
  auto count = xrt_device_count();
  ASSERT_TRUE(count.is_ok()) << count.status().to_string();
  EXPECT_EQ(*count, 1U);
}

TEST_F(EmulatedXrt, OpenReadsTheXclbinOfEachLayout) {
  auto zcu102 = open("zcu102");
  ASSERT_NE(zcu102, nullptr);
  EXPECT_EQ(zcu102->info().kind, "xrt");
  EXPECT_EQ(zcu102->info().clock_mhz, 300U) << "accel/plan/boards/zcu102.toml fabric_clock_mhz";
  EXPECT_NE(zcu102->info().name.find("xilinx_zcu102_base"), std::string::npos) << zcu102->info().name;
  auto f1 = open("aws_f1");
  ASSERT_NE(f1, nullptr);
  EXPECT_EQ(f1->info().clock_mhz, 250U) << "accel/plan/boards/aws-f1.toml fabric_clock_mhz";
  EXPECT_NE(f1->info().name.find("xilinx_aws-vu9p-f1"), std::string::npos) << f1->info().name;
}

TEST_F(EmulatedXrt, RandomConvLayersMatchTheEmulator) { expect_cases_match(0x1, &CaseGenerator::conv_case, 60); }
TEST_F(EmulatedXrt, RandomWindowFoldLayersMatchTheEmulator) { expect_cases_match(0x5, &CaseGenerator::fold_case, 20); }
TEST_F(EmulatedXrt, RandomSpreadLayersMatchTheEmulator) { expect_cases_match(0x6, &CaseGenerator::spread_case, 20); }
TEST_F(EmulatedXrt, RandomThinLargeLayersMatchTheEmulator) { expect_cases_match(0x7, &CaseGenerator::thin_case, 2); }
TEST_F(EmulatedXrt, RandomPoolLayersMatchTheEmulator) { expect_cases_match(0x2, &CaseGenerator::pool_case, 30); }
TEST_F(EmulatedXrt, RandomAddLayersMatchTheEmulator) { expect_cases_match(0x3, &CaseGenerator::add_case, 20); }
TEST_F(EmulatedXrt, RandomNetworksBatch3MatchTheEmulator) { expect_cases_match(0x4, &CaseGenerator::network_case, 6); }

// Consecutive runs of one program alternate its two buffer sets and rewrite the header's batch:
// every batch size, in an order that changes the batch on both sets.
TEST_F(EmulatedXrt, PingPongSetsAndChangingBatchesMatchTheEmulator) {
  auto xrt = open();
  ASSERT_NE(xrt, nullptr);
  EmuDevice emu;
  CaseGenerator generator(20240611u ^ 0x9);
  const BitexactCase c = generator.network_case();
  const CompiledProgram p = whole_arena_io(c.program);
  auto fabric = xrt->load(p, 4);
  auto reference = emu.load(p, 4);
  ASSERT_TRUE(fabric.is_ok() && reference.is_ok());
  bitexact::Rng rng(3);
  for (uint32_t batch : {4U, 1U, 3U, 2U, 4U, 1U}) {
    std::vector<int8_t> in(size_t{batch} * p.input_bytes());
    for (auto& v : in) v = static_cast<int8_t>(rng.range(-128, 127));
    std::vector<int8_t> got(size_t{batch} * p.output_bytes()), want(got.size());
    ASSERT_TRUE((*fabric)->run(in, batch, got, kTimeout).is_ok());
    ASSERT_TRUE((*reference)->run(in, batch, want, kTimeout).is_ok());
    EXPECT_TRUE(got == want) << "batch " << batch;
  }
  EXPECT_GT((*fabric)->last_run_cycles(), 0U) << "wall time x the xclbin's 300 MHz";
}

// --- XRT-level faults (TESSERA_XRT_EMU_FAULTS), through the backend's own error mapping ---

// The first case of network_case with its input, loaded on `device`.
struct LoadedCase {
  CompiledProgram program;
  std::vector<int8_t> in;
  std::unique_ptr<DeviceProgram> loaded;
  Status run(uint32_t batch = 1, std::chrono::milliseconds timeout = kTimeout) {
    std::vector<int8_t> out(size_t{batch} * program.output_bytes());
    return loaded->run(std::span(in).first(size_t{batch} * program.input_bytes()), batch, out, timeout);
  }
};
LoadedCase load_case(Device& device) {
  CaseGenerator generator(20240611u ^ 0x4);
  BitexactCase c = generator.network_case();
  LoadedCase l{whole_arena_io(c.program), c.arena, nullptr};
  auto loaded = device.load(l.program, c.batch);
  EXPECT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  if (loaded.is_ok()) l.loaded = std::move(loaded).value();
  return l;
}

TEST_F(EmulatedXrt, ARunThatNeverCompletesTimesOutAndIsAborted) {
  reset_emulated_xrt("hang-run=2");
  auto xrt = open();
  ASSERT_NE(xrt, nullptr);
  LoadedCase c = load_case(*xrt);
  ASSERT_NE(c.loaded, nullptr);
  EXPECT_TRUE(c.run().is_ok());
  const Status hung = c.run(1, std::chrono::milliseconds(200));
  EXPECT_EQ(hung.code(), StatusCode::kDeadlineExceeded) << hung.to_string();
  EXPECT_NE(hung.message().find("did not finish within 200 ms (aborted: ERT_CMD_STATE_ABORT)"), std::string::npos)
      << hung.message();
  EXPECT_TRUE(c.run().is_ok()) << "the run after an aborted one";
}

TEST_F(EmulatedXrt, ARunEndingInAnErrorStateFailsItsBatch) {
  reset_emulated_xrt("error-run=1");
  auto xrt = open();
  ASSERT_NE(xrt, nullptr);
  LoadedCase c = load_case(*xrt);
  ASSERT_NE(c.loaded, nullptr);
  const Status failed = c.run();
  EXPECT_EQ(failed.code(), StatusCode::kInternal) << failed.to_string();
  EXPECT_NE(failed.message().find("fabric run ended in ERT_CMD_STATE_ERROR"), std::string::npos) << failed.message();
  EXPECT_TRUE(c.run().is_ok());
}

TEST_F(EmulatedXrt, ABufferAllocationThatFailsFailsTheLoad) {
  reset_emulated_xrt("fail-alloc=4");
  auto xrt = open();
  ASSERT_NE(xrt, nullptr);
  CaseGenerator generator(20240611u ^ 0x4);
  auto loaded = xrt->load(whole_arena_io(generator.network_case().program), 3);
  ASSERT_FALSE(loaded.is_ok());
  EXPECT_EQ(loaded.status().code(), StatusCode::kResourceExhausted) << loaded.status().to_string();
  EXPECT_NE(loaded.status().message().find("XRT: allocating buffers"), std::string::npos) << loaded.status().message();
  EXPECT_NE(loaded.status().message().find("fail-alloc"), std::string::npos) << loaded.status().message();
}

TEST_F(EmulatedXrt, ADeviceThatDisappearsFailsLaterRunsOpensAndCounts) {
  reset_emulated_xrt("vanish-after-run=1");
  auto xrt = open();
  ASSERT_NE(xrt, nullptr);
  LoadedCase c = load_case(*xrt);
  ASSERT_NE(c.loaded, nullptr);
  EXPECT_TRUE(c.run().is_ok()) << "run 1 completes; then the card is gone";
  const Status lost = c.run();
  EXPECT_EQ(lost.code(), StatusCode::kInternal) << lost.to_string();
  EXPECT_NE(lost.message().find("XRT run"), std::string::npos) << lost.message();
  const Status reset = xrt->reset();
  EXPECT_EQ(reset.code(), StatusCode::kUnavailable) << reset.to_string();
  EXPECT_NE(reset.message().find("cannot open Xilinx device 0"), std::string::npos) << reset.message();
  auto count = xrt_device_count();
  ASSERT_TRUE(count.is_ok());
  EXPECT_EQ(*count, 0U);
}

// --- several cards ---

TEST_F(EmulatedXrt, DevicesAllOpensEveryCard) {
  ASSERT_EQ(reset_emulated_xrt("", 2), 2);
  DeviceOptions options;
  options.kind = "xrt";
  options.devices = "all";
  options.xrt.xclbin = emu_xclbin("zcu102");
  auto devices = open_devices(options);
  ASSERT_TRUE(devices.is_ok()) << devices.status().to_string();
  ASSERT_EQ(devices->size(), 2U);
  CaseGenerator generator(20240611u ^ 0x4);
  const BitexactCase c = generator.network_case();
  const CompiledProgram p = whole_arena_io(c.program);
  EmuDevice emu;
  const std::vector<int8_t> want = run_on(emu, p, c.batch, c.arena);
  for (auto& opened : *devices) {
    EXPECT_TRUE(run_on(*opened.device, p, c.batch, c.arena) == want) << "card " << opened.index;
  }
}

// --- the aws-f1 layout: three instances of the kernel, each on its own DDR bank ---

TEST_F(EmulatedXrt, TheXclbinNamesItsComputeUnitsAndBanks) {
  auto units = xrt_compute_units(emu_xclbin("aws_f1"));
  ASSERT_TRUE(units.is_ok()) << units.status().to_string();
  EXPECT_EQ(*units, (std::vector<std::string>{"tessera_accel_1", "tessera_accel_2", "tessera_accel_3"}));
  auto f1 = open("aws_f1");
  ASSERT_NE(f1, nullptr);
  // What tesserad logs at load (the same text on a board): uuid, compute units, banks.
  const std::string detail = f1->info().detail;
  EXPECT_NE(detail.find("xclbin uuid "), std::string::npos) << detail;
  EXPECT_NE(detail.find("tessera_accel_2 [program:DDR[1] weights:DDR[1] quant:DDR[1] arena:DDR[1] status:DDR[1]]"),
            std::string::npos)
      << detail;
  auto zcu102 = open("zcu102");
  ASSERT_NE(zcu102, nullptr);
  EXPECT_NE(zcu102->info().detail.find("tessera_accel_1 [program:HP0 weights:HP1 quant:HP0 arena:HP2 status:HP0]"),
            std::string::npos)
      << zcu102->info().detail;
}

// The kernel opened by its name alone gets buffers in the first instance's bank (group_id), so
// XRT can only ever pick that instance: why open_devices opens one device per compute unit.
TEST_F(EmulatedXrt, TheKernelByNameAloneRunsOnTheFirstInstanceOnly) {
  auto f1 = open("aws_f1");
  ASSERT_NE(f1, nullptr);
  LoadedCase c = load_case(*f1);
  ASSERT_NE(c.loaded, nullptr);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(c.run().is_ok());
  EXPECT_EQ(emulated_cu_runs(0, "tessera_accel_1"), 4);
  EXPECT_EQ(emulated_cu_runs(0, "tessera_accel_2"), 0);
  EXPECT_EQ(emulated_cu_runs(0, "tessera_accel_3"), 0);
}

TEST_F(EmulatedXrt, OpenDevicesGivesOneDevicePerInstanceAndTheyRunSideBySide) {
  DeviceOptions options;
  options.kind = "xrt";
  options.board = "aws-f1";
  options.xrt.xclbin = emu_xclbin("aws_f1");
  std::string note;
  auto devices = open_devices(options, &note);
  ASSERT_TRUE(devices.is_ok()) << devices.status().to_string();
  ASSERT_EQ(devices->size(), 3U) << note;
  for (unsigned i = 0; i < 3; ++i) {
    EXPECT_EQ((*devices)[i].index, i);
    EXPECT_NE((*devices)[i].device->info().detail.find("compute unit tessera_accel_" + std::to_string(i + 1) + " ["),
              std::string::npos)
        << (*devices)[i].device->info().detail;
  }
  CaseGenerator generator(20240611u ^ 0x4);
  const BitexactCase c = generator.network_case();
  const CompiledProgram p = whole_arena_io(c.program);
  EmuDevice emu;
  const std::vector<int8_t> want = run_on(emu, p, c.batch, c.arena);
  // One thread per instance, each running batches on its own device, at the same time.
  std::vector<std::thread> threads;
  threads.reserve(3);
  std::vector<int> matches(3, 0);
  for (unsigned i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] {
      for (int r = 0; r < 3; ++r) matches[i] += run_on(*(*devices)[i].device, p, c.batch, c.arena) == want ? 1 : 0;
    });
  }
  for (auto& t : threads) t.join();
  for (unsigned i = 0; i < 3; ++i) {
    EXPECT_EQ(matches[i], 3) << "instance " << i + 1;
    EXPECT_EQ(emulated_cu_runs(0, "tessera_accel_" + std::to_string(i + 1)), 3) << "instance " << i + 1;
  }
}

}  // namespace
}  // namespace tessera::testing
