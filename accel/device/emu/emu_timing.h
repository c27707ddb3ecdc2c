// The emulator's fabric-time model: a deliberately simple roofline per layer,
//   cycles = max(MACs / macs_per_cycle, bytes moved / ddr_bytes_per_cycle),
// bytes moved = input + output activations of every image + the layer's weights once per launch.
// The planner's tiling cost model (accel/plan, a later issue) replaces it with per-tile
// compute/transfer overlap from seeds 000/002; until then this gives the right order of magnitude.
#pragma once

#include <cstdint>
#include <span>

#include "kernels/kernel_abi.h"

namespace tessera {

// Board parameters; the defaults describe a zcu102 build of the accelerator.
struct EmuTimingModel {
  double clock_mhz = 300.0;
  uint32_t macs_per_cycle = 1024;
  double ddr_bytes_per_cycle = 64.0;
};

namespace emu {

// Work of one layer for a batch: multiply-accumulates (window ops for pool/add) and DDR bytes.
struct LayerWork {
  uint64_t macs = 0;
  uint64_t bytes = 0;
};
LayerWork layer_work(const abi::LayerDesc& d, uint32_t batch);

// Modelled fabric cycles of a launch: the sum over layers.
uint64_t model_cycles(const EmuTimingModel& model, std::span<const abi::LayerDesc> layers, uint32_t batch);

}  // namespace emu
}  // namespace tessera
