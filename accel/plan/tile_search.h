// Per-layer tile search: exhaustive over tile sizes x schedules (IS/OS/WS) x partitions over
// compute units (KS/OFM/KS&OFM), minimising the cost model of cost_model.h.
//
// Papers: exhaustive per-layer search under the double-buffering constraint (tiles within half
// the on-chip memory) and the "naive" tiling that fills >= 80% of it (Cecconi et al.,
// seeds/000_930347495db50051.txt, sec. 4.2-4.3 and 6.1); TSO's search over partitions,
// schedules and tiles (Sousa et al., seeds/002_442fbcc29e97fffd.txt, Algorithms 1 and 3).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "accel/common/status.h"
#include "accel/plan/board_profile.h"
#include "accel/plan/cost_model.h"
#include "kernels/kernel_abi.h"

namespace tessera::plan {

// What "best" means: shortest estimated time (TSO), fewest DDR bytes (seeds/000's objective) or
// least energy. Ties go to time (bytes for kTime), then to the larger tile, then to the earlier
// schedule/partition. kTime is indifferent to traffic hidden under the MACs of compute-bound
// layers; kEnergy charges it.
enum class Objective : uint8_t { kTime, kDdrBytes, kEnergy };

struct SearchOptions {
  DramModel model = DramModel::kBurst;
  // Seeds/000's naive tiling instead of the optimum: the fullest tile set (>= 80% of the
  // double-buffer budget if any reaches it), with its best schedule and partition.
  bool naive = false;
  Objective objective = Objective::kTime;
  // false: only the board's budget limits tiles (not abi::layer_fits), to model kernels with
  // wider tiles than this one, e.g. TSO's full-width 73-column rows.
  bool abi_limits = true;
  // Only this schedule (e.g. kInputStationary = the fixed tiling loop of seeds/000 listing 1.1).
  std::optional<Schedule> schedule;
  // Only the loop orders the HLS kernel runs (abi::LoopOrder): output stationary, and input
  // stationary where one tile holds all input channels of an ungrouped conv.
  bool kernel_orders = false;
  // Worker threads over tile_m values; 0 = hardware concurrency.
  unsigned threads = 0;
};

struct TilePlan {
  Candidate candidate;
  CostBreakdown cost;
  uint64_t evaluated = 0;  // candidates costed
  uint64_t pruned = 0;     // tiles skipped by the lower bound
  double search_ms = 0;
};

// The values tried for a tile dimension of `extent` capped at `cap`: divisors of the extent
// (seeds/000 sec. 4.2), the smallest tile for each of the first few tile counts, powers of two.
std::vector<uint32_t> tile_values(uint32_t extent, uint32_t cap);

// Whether the HLS kernel has a loop order for the schedule of this tile (abi::LoopOrder): output
// stationary always, input stationary for ungrouped convs whose tile holds every input channel.
bool kernel_runs(const ConvGeometry& g, const TileShape& t, Schedule s);

// Whether the HLS kernel can fold the tile's whole kernel window into the MAC vector
// (abi::LayerDesc.fold_rows: ungrouped, undilated, tile_n x kernel_h x kernel_w <= kMaxVector,
// kernel_h > 1). The explore space tries it too, so it contains the kernel space.
bool kernel_folds_rows(const ConvGeometry& g, const TileShape& t);

// Whether a tile is allowed: abi::layer_fits (if opts.abi_limits) and the board's budget.
bool tile_allowed(const abi::LayerDesc& d, const ConvGeometry& g, const BoardProfile& board, const TileShape& t,
                  bool abi_limits);

// Best candidate with its cost. Errors: not a conv layer, or no tile fits.
Result<TilePlan> search_tiles(const abi::LayerDesc& d, const BoardProfile& board, const SearchOptions& opts = {});

// Same answer without pruning or threads: the reference the tests compare search_tiles against.
Result<TilePlan> search_tiles_brute_force(const abi::LayerDesc& d, const BoardProfile& board,
                                          const SearchOptions& opts = {});

// Writes the plan's tile and loop order into the descriptor.
void apply_plan(abi::LayerDesc& d, const TilePlan& plan);
// The same for one candidate: input stationary when its schedule is and the kernel runs it
// (kernel_runs), else output stationary (the explore space's other schedules keep only tiles).
void apply_candidate(abi::LayerDesc& d, const Candidate& c);

}  // namespace tessera::plan
