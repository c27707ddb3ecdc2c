// Board profiles for the tile search: the numbers the DMA/DRAM/MAC cost model needs, one TOML
// file per board under accel/plan/boards/, every number with a `# source:` comment.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "accel/common/status.h"

namespace tessera::plan {

struct BoardProfile {
  std::string name;
  double fabric_clock_mhz = 0;
  // MAC array: mac_lanes output channels x mac_channels input channels per cycle (int8), per CU.
  uint32_t mac_lanes = 0;
  uint32_t mac_channels = 0;
  uint32_t compute_units = 0;
  // Total on-chip bytes per CU for each operand (both halves of a double-buffered pair).
  uint64_t input_buffer_bytes = 0;
  uint64_t weight_buffer_bytes = 0;
  uint64_t output_buffer_bytes = 0;
  double ddr_gbps = 0;
  uint32_t burst_bytes = 0;
  // CAS latency per burst in fabric cycles (TSO, seeds/002, Algorithm 4).
  double cas_cycles = 0;
  // DMA cost T = C + s*p + n*t in fabric cycles (Cecconi et al., seeds/000, eq. 1).
  double dma_start_cycles = 0;    // C
  double dma_scatter_cycles = 0;  // p
  double dma_byte_cycles = 0;     // t
  double static_watts = 0;
  double pj_per_mac = 0;
  double pj_per_ddr_byte = 0;
  // The FPGA part and its datasheet totals, for the resource estimate (resource_estimate.h).
  // Optional keys: a profile without `part` has no estimate.
  std::string part;
  uint32_t part_dsp = 0, part_bram36 = 0, part_uram = 0;
  double shell_share = 0;          // share of every resource the platform shell keeps (F1)
  uint32_t int8_macs_per_dsp = 1;  // 2 on DSP48E2 (UltraScale+) with int8 packing, 1 on DSP48E1
  bool output_in_uram = false;     // the int32 accumulator tile in URAM (kernels' TESSERA_OUT_URAM)
  // Kernel instances the xclbin holds (optional key, default 1): each runs whole programs (a batch)
  // on its own DDR channel, so throughput scales with them and one image's time does not.
  uint32_t kernel_instances = 1;
  // DDR bandwidth one instance reaches (optional key; 0 = ddr_gbps): its own channel's, where the
  // profile's ddr_gbps is the aggregate of several.
  double instance_ddr_gbps = 0;
  // Elements per cycle of the add engine (optional key, default abi::schedule::kAddLanes = 16, at
  // most kMaxAddLanes = 32; kernels' TESSERA_ADD_LANES): requantize_add units, 4 DSP48 each.
  uint32_t add_lanes = 16;
  // The host's CPU as the placement report models host ops (placement.h; optional keys, 0 =
  // unknown): sustained fp32 GFLOP/s over all cores, and streaming memory GB/s.
  double host_gflops = 0;
  double host_gbps = 0;

  uint64_t macs_per_cycle() const { return static_cast<uint64_t>(mac_lanes) * mac_channels; }
  // Double buffering: one set of tiles may use at most half the on-chip memory (seeds/000, sec. 4.2).
  uint64_t tile_budget_bytes() const { return (input_buffer_bytes + weight_buffer_bytes + output_buffer_bytes) / 2; }
  // DDR bytes per fabric cycle.
  double ddr_bytes_per_cycle() const { return ddr_gbps * 1e3 / fabric_clock_mhz; }
};

// Loads <boards_dir()>/<name>.toml. Errors name the file and the key.
Result<BoardProfile> load_board_profile(std::string_view name);

// Loads one profile file (the board's name is the file's stem).
Result<BoardProfile> load_board_profile_file(const std::filesystem::path& file);

// Names of the boards with a profile, sorted.
std::vector<std::string> board_names();

// The directory the profiles are read from, the first of: $TESSERA_BOARDS_DIR (non-empty);
// <dir of the running binary>/../share/tessera/boards when it exists (an installed tree, see the
// install target); the source tree's accel/plan/boards (compile-time TESSERA_BOARDS_DIR, a build).
std::string boards_dir();

}  // namespace tessera::plan
