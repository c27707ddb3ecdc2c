// One hardware spec (issue 27 point 2): a board's MAC array, kernel clock, accumulator URAM, int8
// packing, add lanes, kernel instances and on-chip buffers come from its profile
// (accel/plan/boards/<board>.toml), which the planner's cost model, cycle counter and resource
// estimate read. The kernel's Vitis build (kernels/Makefile, `make print-config`) reads the same
// file; its link config (connectivity_<board>.cfg) must instantiate the profile's kernel instances
// and leave the clock to it; kernel_abi.h's buffer sizes must be the profile's. Changing any one of
// them alone fails here. (The cycle-accounting C simulation, built from zcu102.toml by
// kernels/CMakeLists.txt, is checked in tests/cycles.)
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include "accel/plan/board_profile.h"
#include "kernels/kernel_abi.h"

namespace tessera::plan {
namespace {

// The boards kernels/Makefile builds, with a platform name that selects each.
struct VitisBoard {
  const char* board;     // profile name
  const char* cfg;       // kernels/connectivity_<cfg>.cfg
  const char* platform;  // PLATFORM= for make
};
constexpr std::array<VitisBoard, 3> kVitisBoards = {{
    {"zcu102", "zcu102", "xilinx_zcu102_base_202220_1"},
    {"zcu104", "zcu104", "xilinx_zcu104_base_202220_1"},
    {"aws-f1", "aws_f1", "xilinx_aws-vu9p-f1_shell-v04261818_201920_3"},
}};

std::string source_dir() { return TESSERA_SOURCE_DIR; }

// `make -s -C kernels print-config PLATFORM=...` as KEY -> value; empty when make cannot run.
std::map<std::string, std::string> make_config(const std::string& platform) {
  std::map<std::string, std::string> config;
  const std::string cmd = "make -s --no-print-directory -C '" + source_dir() +
                          "/kernels' print-config PLATFORM=" + platform + " 2>/dev/null";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return config;
  std::array<char, 512> line{};
  while (fgets(line.data(), static_cast<int>(line.size()), pipe) != nullptr) {
    std::string s(line.data());
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    const size_t eq = s.find('=');
    if (eq != std::string::npos) config[s.substr(0, eq)] = s.substr(eq + 1);
  }
  if (pclose(pipe) != 0) config.clear();
  return config;
}

// A config file's lines without its comments.
std::string read_settings(const std::string& path) {
  std::ifstream in(path);
  std::string line, text;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != '#') text += line + "\n";
  }
  return text;
}

bool have_make() { return std::system("make --version >/dev/null 2>&1") == 0; }  // NOLINT(cert-env33-c)

TEST(HardwareSpec, VitisBuildReadsEveryValueFromTheBoardProfile) {
  if (!have_make()) GTEST_SKIP() << "no make on PATH";
  for (const VitisBoard& vb : kVitisBoards) {
    SCOPED_TRACE(vb.board);
    Result<BoardProfile> b = load_board_profile(vb.board);
    ASSERT_TRUE(b.is_ok()) << b.status().message();
    std::map<std::string, std::string> c = make_config(vb.platform);
    ASSERT_FALSE(c.empty()) << "make print-config failed for " << vb.platform;
    EXPECT_EQ(c["BOARD_TOML"], source_dir() + "/accel/plan/boards/" + vb.board + ".toml");
    EXPECT_EQ(c["MAC_LANES"], std::to_string(b->mac_lanes));
    EXPECT_EQ(c["MAC_CHANNELS"], std::to_string(b->mac_channels));
    EXPECT_EQ(std::stod(c["KERNEL_FREQ_MHZ"]), b->fabric_clock_mhz);
    EXPECT_EQ(c["OUT_URAM"], b->output_in_uram ? "1" : "0");
    EXPECT_EQ(c["INT8_PACK"], b->int8_macs_per_dsp == 2 ? "1" : "0");
    EXPECT_EQ(c["ADD_LANES"], std::to_string(b->add_lanes));
    EXPECT_EQ(c["KERNEL_INSTANCES"], std::to_string(b->kernel_instances));
    // The link config instantiates as many compute units as the profile (and the estimate) count.
    EXPECT_EQ(c["CFG_INSTANCES"], std::to_string(b->kernel_instances));
  }
}

// The clock is the profile's alone: no link config carries its own.
TEST(HardwareSpec, LinkConfigsLeaveTheClockToTheProfile) {
  for (const VitisBoard& vb : kVitisBoards) {
    const std::string cfg = read_settings(source_dir() + "/kernels/connectivity_" + vb.cfg + ".cfg");
    ASSERT_NE(cfg.find("nk="), std::string::npos) << vb.cfg;
    EXPECT_EQ(cfg.find("freqHz"), std::string::npos) << vb.cfg << ": a clock beside the profile's";
    EXPECT_EQ(cfg.find("[clock]"), std::string::npos) << vb.cfg;
    EXPECT_EQ(cfg.find("kernel_frequency"), std::string::npos) << vb.cfg;
  }
}

// Every profile: the buffers are kernel_abi.h's (both halves of each pair), the array folds the
// ABI's 64 x 64 datapath evenly, packing only on DSP48E2 parts, add lanes the kernel can build.
TEST(HardwareSpec, EveryProfileMatchesTheKernelAbi) {
  for (const std::string& name : board_names()) {
    SCOPED_TRACE(name);
    Result<BoardProfile> b = load_board_profile(name);
    ASSERT_TRUE(b.is_ok()) << b.status().message();
    EXPECT_EQ(b->input_buffer_bytes, 2ull * abi::kInputBufferBytes);
    EXPECT_EQ(b->weight_buffer_bytes, 2ull * abi::kWeightBufferBytes);
    EXPECT_EQ(b->output_buffer_bytes, 2ull * abi::kOutputBufferBytes);
    EXPECT_EQ(abi::kMaxTileM % b->mac_lanes, 0u);
    EXPECT_EQ(abi::kMaxVector % b->mac_channels, 0u);
    EXPECT_EQ(abi::schedule::kMaxAddLanes % b->add_lanes, 0u);
    // DSP48E2 (UltraScale+: XCZU*, XCVU*) packs two int8 products; DSP48E1 (XC7Z*) does not.
    const bool dsp48e2 = b->part.rfind("XCZU", 0) == 0 || b->part.rfind("XCVU", 0) == 0;
    EXPECT_EQ(b->int8_macs_per_dsp, dsp48e2 ? 2u : 1u) << b->part;
  }
}

}  // namespace
}  // namespace tessera::plan
