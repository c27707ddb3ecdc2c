// The HLS kernel's schedule as cycles: what kernels/accel_conv*.h's load, compute and store halves
// take for a tiled convolution, loop by loop (iterations x declared II + pipeline depth per loop
// entry, abi::schedule), summed over the tiles as the kernel visits them. The cycle-accounting
// C simulation (kernels/accel_count.h, tests/cycles) holds these formulas to the kernel.
#pragma once

#include <cstdint>

#include "accel/plan/board_profile.h"
#include "accel/plan/cost_model.h"
#include "kernels/kernel_abi.h"

namespace tessera::plan {

struct KernelCycles {
  double compute = 0;  // MAC pixel loops with the weight staging beside them
  double load = 0;     // input and weight tiles, 512-bit beats
  double store = 0;    // quant reads, requantise + pool into a staging tile
  double write = 0;    // 512-bit writes of the staging tiles (the write half, beside the store half)
  double fill = 0;     // the exposed last store and write (one output tile's share of both halves)
};

// Bytes the kernel's banked buffers take for one set of tiles: each input tile channel and each
// weight lane in whole rows of abi::kBanks bytes (abi::layer_fits).
uint64_t input_buffer_bytes(const ConvGeometry& g, const TileShape& t);
uint64_t weight_buffer_bytes(const ConvGeometry& g, const TileShape& t);

// The three halves over one CU's slice of slice_m filters x slice_r output rows; input_stationary:
// the kernel's (r, c, m) order, each spatial tile's input loaded once (abi::kLoopInputStationary).
KernelCycles kernel_cycles(const ConvGeometry& g, const BoardProfile& b, const TileShape& t, uint32_t slice_m,
                           uint32_t slice_r, bool input_stationary);

// The MAC pixel loops alone (no depths, no staging) over the whole layer spread over the CUs: a
// lower bound of the compute half for every partition.
double kernel_mac_floor(const ConvGeometry& g, const BoardProfile& b, const TileShape& t);

// A standalone pool (kernels/accel_pool.h) on the conv engine's tiles: its traffic, the load
// half, the pool loop (mac_cycles) and the writes (store_cycles, after the pool loop of the same
// tile: serial_store), steps and window operations (macs).
void kernel_pool_cost(const abi::LayerDesc& d, const BoardProfile& b, CostBreakdown& cb);

// An element-wise add (kernels/accel_add.h): per chunk two read runs, the add lanes and one write
// run, the chunks ping-ponged (reads, lanes and writes of three chunks at once), plus the
// {M_a, M_b, S} read.
void kernel_add_cost(const abi::LayerDesc& d, const BoardProfile& b, CostBreakdown& cb);

}  // namespace tessera::plan
