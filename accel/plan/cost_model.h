// Analytical cost of one tiled convolution on a board: DDR traffic, DMA calls, DRAM bursts,
// MAC and DRAM time, total cycles and energy. The tile search (tile_search.h) minimises it.
//
// Papers: DMA cost T = C + s*p + n*t and the DMA call counts of the tiling loop (Cecconi et al.,
// seeds/000_930347495db50051.txt, eq. 1-6); schedules IS/OS/WS and their DRAM access counts,
// partitions KS/OFM/KS&OFM over compute units, MAC time and the burst-aware DRAM model (Sousa et
// al., TSO, seeds/002_442fbcc29e97fffd.txt, Algorithms 2 and 4, eq. 3-5, 7-9).
#pragma once

#include <cstdint>
#include <string>

#include "accel/plan/board_profile.h"
#include "kernels/kernel_abi.h"

namespace tessera::plan {

// Tiles of extent b that cover a (the cost model's and the cycle count's).
inline constexpr uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// Loop order of the tiles (TSO, seeds/002, sec. IV-D).
enum class Schedule : uint8_t {
  // Input stationary: spatial, input-channel loops outside, output channels inside; an input tile
  // is read once, weights are re-read per spatial tile, partial sums go back to DDR between
  // input-channel tiles (the loop of seeds/000 listing 1.1, eq. 5-6; TSO eq. 3).
  kInputStationary,
  // Output stationary: an output tile stays on chip until complete (TSO eq. 4).
  kOutputStationary,
  // Weight stationary: each weight tile is read once, inputs are re-read per output-channel tile
  // and partial sums spill between input-channel tiles (TSO eq. 5).
  kWeightStationary,
};

// How a layer is split over the board's compute units (TSO, seeds/002, Algorithm 2).
enum class PartitionKind : uint8_t {
  kKs,     // filters split over CUs, every CU reads the whole input
  kOfm,    // output rows split over CUs, every CU reads all weights
  kKsOfm,  // filters split in two, rows over CUs/2 (only with >= 4 CUs)
};

// DRAM time model (seeds/002 Algorithm 4 and eq. 9): kVolume = bytes / bandwidth (TSO-noburst);
// kBurst = whole bursts / bandwidth + CAS latency per contiguous run + DMA start cost C per call
// (seeds/000 eq. 1), so partial rows and small tiles pay for their scattered accesses.
enum class DramModel : uint8_t { kBurst, kVolume };

const char* schedule_name(Schedule s);
const char* partition_name(PartitionKind p);

// Tile sizes as in abi::LayerDesc: output channels, input channels per group, rows and columns of
// the final output; fold_rows: LayerDesc.fold_rows (the kernel window folded into the MAC vector,
// input rows at a padded pitch), which changes the tile's input buffer and its loops.
struct TileShape {
  uint32_t m = 1, n = 1, r = 1, c = 1;
  bool fold_rows = false;
};

struct Candidate {
  TileShape tile;
  Schedule schedule = Schedule::kOutputStationary;
  PartitionKind partition = PartitionKind::kKs;
};

struct CostBreakdown {
  // Bytes of one set of tiles: input (with halo), weights, output accumulators (int32).
  uint64_t input_tile_bytes = 0, weight_tile_bytes = 0, output_tile_bytes = 0;
  uint64_t footprint_bytes = 0;
  // DDR traffic of the whole layer, all CUs.
  uint64_t input_bytes = 0, weight_bytes = 0, output_bytes = 0, ddr_bytes = 0;
  uint64_t quant_bytes = 0;  // bias/multiplier/shift reads, once per finished output tile
  uint64_t dma_calls = 0;    // one per tile transfer (seeds/000 eq. 5-6)
  uint64_t dma_runs = 0;     // contiguous runs = scatter jumps s of seeds/000 eq. 1
  uint64_t bursts = 0;       // sum over runs of ceil(run bytes / burst)
  uint64_t steps = 0;        // compute steps per CU (tile iterations)
  uint32_t cus_used = 0;
  uint64_t macs = 0;  // useful MACs of the layer
  // Per CU: the kernel's compute half (the MAC pixel loop in chunks of the array's channels, the
  // weight staging beside it), idle lanes included (TSO eq. 7-8 refined to kernels/accel_conv.h).
  double mac_cycles = 0;
  // Per CU: the kernel's load half (512-bit beats, accel_conv_load.h) and store half (requantise,
  // pool and 512-bit writes, accel_conv_store.h); the three halves run concurrently and the
  // longest, or DRAM, bounds the layer.
  double load_cycles = 0;
  double store_cycles = 0;
  double write_cycles = 0;    // conv: the output writes, a fourth half beside the store half
  bool serial_store = false;  // the store follows the compute in one half (pools), not beside it
  bool serial_all = false;    // load, compute and store one after the other (adds)
  double fill_cycles = 0;     // exposed pipeline fill besides the first load: the last store
  double dram_cycles = 0;     // shared DDR, chosen model (TSO eq. 9)
  double dma_cycles = 0;      // seeds/000 eq. 1-4 over all transfers (reported, not in total)
  double total_cycles = 0;    // max(compute, load, store, DRAM) + pipeline fill
  bool memory_bound = false;
  double energy_uj = 0;  // pJ/MAC x MACs + pJ/byte x DDR bytes + static W x time
};

// Geometry of a conv layer read off a descriptor (fused max-pool included).
struct ConvGeometry {
  uint32_t in_c, in_h, in_w, out_c, out_h, out_w;
  uint32_t kernel_h, kernel_w, stride_h, stride_w, dilation_h, dilation_w, groups;
  uint32_t pool_h = 1, pool_w = 1, pool_stride_h = 1, pool_stride_w = 1;
  bool pooled = false;
  // Top/left padding of the conv and of the fused pool: where each tile's input window starts.
  uint32_t pad_top = 0, pad_left = 0, pool_pad_top = 0, pool_pad_left = 0;
  uint32_t in_per_group() const { return in_c / groups; }
  uint32_t out_per_group() const { return out_c / groups; }
  // Conv rows/cols behind `out` final output rows/cols (through the fused pool).
  uint32_t conv_rows(uint32_t out) const { return pooled ? (out - 1) * pool_stride_h + pool_h : out; }
  uint32_t conv_cols(uint32_t out) const { return pooled ? (out - 1) * pool_stride_w + pool_w : out; }
  // Input rows/cols (halo included, clamped to the tensor) behind `out` output rows/cols.
  uint32_t in_rows(uint32_t out) const;
  uint32_t in_cols(uint32_t out) const;
  // Input channels a tile of m output channels and n input channels per group reads.
  uint32_t tile_in_channels(uint32_t m, uint32_t n) const;
};

ConvGeometry conv_geometry(const abi::LayerDesc& d);

// A descriptor for a plain conv layer ('same' padding for odd kernels), for tests and tools.
abi::LayerDesc make_conv_desc(uint32_t in_c, uint32_t in_h, uint32_t in_w, uint32_t out_c, uint32_t kernel,
                              uint32_t stride, uint32_t groups = 1);

// On-chip bytes of one set of tiles (input int8, weights int8, output int32 accumulators).
uint64_t tile_footprint(const ConvGeometry& g, const TileShape& t);

// Cost of a candidate; the caller checks the candidate fits (abi::layer_fits and the budget).
CostBreakdown evaluate(const ConvGeometry& g, const BoardProfile& board, const Candidate& c, DramModel model);
// The time and energy of a layer whose transfer counts (calls, runs, bursts, bytes), MAC cycles,
// MACs and steps are set: DRAM cycles by `model`, double-buffered total, bound, energy.
void finish_cost(CostBreakdown& cb, const BoardProfile& board, DramModel model);

// A hand-over between two fabric segments: the host reads `bytes_out` from DDR and writes
// `bytes_in` back (one contiguous run each), then launches the next program (one DMA start).
CostBreakdown evaluate_handover(uint64_t bytes_out, uint64_t bytes_in, const BoardProfile& board, DramModel model);

// Lower bound of evaluate(...).total_cycles over all schedules/partitions for this tile: the
// MAC time with all CUs busy and the compulsory DDR traffic (every byte once).
double lower_bound_cycles(const ConvGeometry& g, const BoardProfile& board, const TileShape& t);

// Lower bound of evaluate(...).energy_uj over all schedules/partitions for this tile.
double lower_bound_energy_uj(const ConvGeometry& g, const BoardProfile& board, const TileShape& t);

// Bytes every schedule must move at least: input, weights and output once.
uint64_t compulsory_bytes(const ConvGeometry& g);

}  // namespace tessera::plan
