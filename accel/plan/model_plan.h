// A whole program's plan on one board: the tile search (tile_search.h) for every conv layer, the
// streamed cost of pool and add layers, totals per image (time, DDR traffic, energy, MAC rate),
// and the ProgramModel the emulator reports as modeled fabric time.
//
// Two search spaces. "kernel" (the default, what compile_model applies): the loop order the HLS
// kernel executes (output stationary, kernels/accel_conv.h) on one compute unit, tiles within
// abi::layer_fits and the double-buffer budget. "explore": TSO's whole space — IS/OS/WS
// schedules x KS/OFM/KS&OFM partitions over the profile's compute units (seeds/002) — a design
// study of what another kernel could reach; its choices are reported, never executed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "accel/common/status.h"
#include "accel/plan/board_profile.h"
#include "accel/plan/cost_model.h"
#include "accel/plan/tile_search.h"
#include "accel/program/program.h"
#include "kernels/kernel_abi.h"

namespace tessera::plan {

enum class SearchSpace : uint8_t { kKernel, kExplore };

struct PlanOptions {
  SearchSpace space = SearchSpace::kKernel;
  DramModel dram = DramModel::kBurst;
  // Energy by default: DDR traffic costs joules even where the MACs hide its time.
  Objective objective = Objective::kEnergy;
  bool naive = false;    // seeds/000's naive tiles (fullest tile set) instead of the search
  unsigned threads = 0;  // search workers per layer; 0 = hardware concurrency
};

const char* search_space_name(SearchSpace s);
const char* objective_name(Objective o);
const char* dram_model_name(DramModel m);
Result<SearchSpace> parse_search_space(std::string_view name);
Result<Objective> parse_objective(std::string_view name);

struct LayerPlan {
  std::string name;       // the graph node the layer starts at
  abi::LayerDesc desc;    // the descriptor with the plan's tiles
  bool searched = false;  // conv: tile search; pool/add: streamed, tiles by the fixed rule
  Candidate candidate;    // tiles, schedule, partition (pool/add: OS/KS, tiles of desc)
  CostBreakdown cost;     // per image
  uint64_t evaluated = 0, pruned = 0;
  double search_ms = 0;
  uint64_t budget_bytes = 0;  // the double-buffer budget the tiles had to fit
  double ocm_use() const { return budget_bytes ? static_cast<double>(cost.footprint_bytes) / budget_bytes : 0; }
};

// A round trip through the host between two fabric segments, per image: the host reads one
// segment's output from DDR (`from`, bytes_out) and writes the next one's input back (`to`,
// bytes_in), and the next program is launched. The fabric's own writes and reads of those
// tensors are in its layers' costs already.
struct HandoverPlan {
  std::string from, to;
  uint64_t bytes_out = 0, bytes_in = 0;
  CostBreakdown cost;  // DDR time and energy of the round trip and the launch
};

struct ModelPlan {
  BoardProfile board;
  PlanOptions options;
  std::vector<LayerPlan> layers;
  std::vector<HandoverPlan> handovers;  // between fabric segments, in order

  // Adds a hand-over between two fabric segments, costed on the plan's board and DRAM model.
  void add_handover(std::string from, std::string to, uint64_t bytes_out, uint64_t bytes_in);
  // One image's hand-over time, in fabric cycles (included in cycles()).
  double handover_cycles() const;

  // Per image, over all layers and hand-overs.
  double cycles() const;
  uint64_t ddr_bytes() const;
  uint64_t bursts() const;
  uint64_t macs() const;
  double energy_uj() const;  // per image, the static share split over the kernel instances
  double search_ms() const;
  // One image's time on one CU (kernel: one instance), back to back.
  double seconds_per_image() const;
  // Throughput: the kernel instances run batches side by side (instances() / seconds_per_image).
  double images_per_second() const;
  double gops() const;             // 2 x MACs x images per second, 1e9
  double peak_gops() const;        // 2 x MACs/cycle x CUs x instances x clock
  double watts() const;            // energy per image x images per second
  uint32_t compute_units() const;  // CUs the search space uses for one program (kernel: 1)
  uint32_t instances() const;      // kernel instances side by side (kernel space; explore: 1)
};

// Plans `layers` (tiles are overwritten in the returned descriptors; `names` one per layer).
// Errors name the layer that no tile of the board fits.
Result<ModelPlan> plan_layers(std::span<const abi::LayerDesc> layers, std::span<const std::string> names,
                              const BoardProfile& board, const PlanOptions& options = {});

// A plan from given choices (one per layer; a cache hit): costed, not searched. Errors when a
// choice does not fit the layer or the board (a stale cache).
Result<ModelPlan> plan_with_choices(std::span<const abi::LayerDesc> layers, std::span<const std::string> names,
                                    const BoardProfile& board, const PlanOptions& options,
                                    std::span<const Candidate> choices);

// The profile the search uses for a space: kernel = one compute unit (the xclbin runs a whole
// program on one CU), explore = the profile as written.
BoardProfile effective_board(const BoardProfile& board, SearchSpace space);

// Cost of a pool or add layer streamed through the fabric (no reuse: each byte in and out once).
CostBreakdown evaluate_stream(const abi::LayerDesc& d, const BoardProfile& board, DramModel model);

// The same choices costed under another DRAM model (TSO's comparison: tiles picked by the
// volume-only model, then timed by the burst-aware one).
ModelPlan rescore(const ModelPlan& plan, DramModel model);

// What the device reports as modeled fabric figures (cycles, DDR bytes, energy per layer), for
// the plan's layers [first, first + count) (one fabric segment's program; all by default).
ProgramModel program_model(const ModelPlan& plan, size_t first = 0, size_t count = SIZE_MAX);

}  // namespace tessera::plan
