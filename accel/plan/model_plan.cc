#include "accel/plan/model_plan.h"

#include <algorithm>
#include <cmath>

#include "accel/plan/compiler.h"

namespace tessera::plan {
namespace {

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

SearchOptions search_options(const PlanOptions& o) {
  SearchOptions s;
  s.model = o.dram;
  s.naive = o.naive;
  s.objective = o.objective;
  s.threads = o.threads;
  // The kernel executes output-stationary tiles within abi::layer_fits (kernels/accel_conv.h);
  // the explore space lifts both, keeping only the board's double-buffer budget.
  if (o.space == SearchSpace::kKernel) s.schedule = Schedule::kOutputStationary;
  s.abi_limits = o.space == SearchSpace::kKernel;
  return s;
}

// A new LayerPlan for layer i: name, descriptor, budget.
LayerPlan start_layer(const abi::LayerDesc& d, const std::string& name, const BoardProfile& b) {
  LayerPlan lp;
  lp.name = name;
  lp.desc = d;
  lp.budget_bytes = b.tile_budget_bytes();
  return lp;
}

// Pool and add layers: tiles by the compiler's fixed rule, costed as a stream.
Status plan_stream_layer(LayerPlan& lp, const BoardProfile& b, DramModel dram) {
  if (Status s = choose_tiles(lp.desc); !s.is_ok()) return Status(s.code(), "layer '" + lp.name + "': " + s.message());
  lp.candidate.tile = {lp.desc.tile_m, lp.desc.tile_n, lp.desc.tile_r, lp.desc.tile_c};
  lp.cost = evaluate_stream(lp.desc, b, dram);
  return Status::ok();
}

void set_tiles(abi::LayerDesc& d, const TileShape& t) {
  d.tile_m = t.m;
  d.tile_n = t.n;
  d.tile_r = t.r;
  d.tile_c = t.c;
}

}  // namespace

const char* search_space_name(SearchSpace s) { return s == SearchSpace::kKernel ? "kernel" : "explore"; }

const char* objective_name(Objective o) {
  switch (o) {
    case Objective::kTime: return "time";
    case Objective::kDdrBytes: return "bytes";
    case Objective::kEnergy: return "energy";
  }
  return "?";
}

const char* dram_model_name(DramModel m) { return m == DramModel::kBurst ? "burst" : "volume"; }

Result<SearchSpace> parse_search_space(std::string_view name) {
  if (name == "kernel") return SearchSpace::kKernel;
  if (name == "explore") return SearchSpace::kExplore;
  return Status::invalid_argument("unknown search space '" + std::string(name) + "' (kernel, explore)");
}

Result<Objective> parse_objective(std::string_view name) {
  if (name == "time") return Objective::kTime;
  if (name == "bytes") return Objective::kDdrBytes;
  if (name == "energy") return Objective::kEnergy;
  return Status::invalid_argument("unknown objective '" + std::string(name) + "' (time, bytes, energy)");
}

BoardProfile effective_board(const BoardProfile& board, SearchSpace space) {
  BoardProfile b = board;
  if (space == SearchSpace::kKernel) b.compute_units = 1;
  return b;
}

namespace {

// Every DMA the stream kernels issue is one call moving one contiguous run: `count` runs of
// `run_bytes` each into `cb`'s calls, runs and bursts; the bytes they move.
uint64_t add_runs(CostBreakdown& cb, uint64_t count, uint64_t run_bytes, uint64_t burst) {
  cb.dma_calls += count;
  cb.dma_runs += count;
  cb.bursts += count * ceil_div(run_bytes, burst);
  return count * run_bytes;
}

// kernels/accel_pool.h, per channel, output row and tile_c-wide strip. Input: a strip
// spanning the whole output row reads its window's valid input rows whole, as one run of
// rows x in_w bytes when that fits the line buffer (abi::kPoolLineBytes); otherwise each
// valid window row is one run over the strip's clipped input columns.
void cost_pool_input(const abi::LayerDesc& d, uint64_t tile_c, uint64_t burst, CostBreakdown& cb) {
  const auto clip = [](int64_t v, uint64_t bound) -> uint64_t {
    return v < 0 ? 0 : std::min<uint64_t>(static_cast<uint64_t>(v), bound);
  };
  uint64_t in_runs = 0, in_bytes = 0, in_bursts = 0, max_run = 0;
  for (uint32_t r = 0; r < d.out_h; ++r) {
    const int64_t wy0 = static_cast<int64_t>(r) * d.pool_stride_h - d.pool_pad_top;
    const uint64_t rows = clip(wy0 + d.pool_h, d.in_h) - clip(wy0, d.in_h);
    for (uint64_t c0 = 0; c0 < d.out_w; c0 += tile_c) {
      const uint64_t count = std::min<uint64_t>(tile_c, d.out_w - c0);
      const int64_t wx0 = static_cast<int64_t>(c0 * d.pool_stride_w) - d.pool_pad_left;
      const uint64_t span =
          clip(wx0 + static_cast<int64_t>((count - 1) * d.pool_stride_w + d.pool_w), d.in_w) - clip(wx0, d.in_w);
      uint64_t runs = 0, run_bytes = 0;
      if (count == d.out_w && rows > 0 && rows * d.in_w <= abi::kPoolLineBytes) {
        runs = 1, run_bytes = rows * d.in_w;
      } else if (span > 0) {
        runs = rows, run_bytes = span;
      }
      in_runs += runs;
      in_bytes += runs * run_bytes;
      in_bursts += runs * ceil_div(run_bytes, burst);
      if (runs > 0) max_run = std::max(max_run, run_bytes);
    }
  }
  cb.dma_calls = cb.dma_runs = in_runs * d.out_c;
  cb.bursts = in_bursts * d.out_c;
  cb.input_bytes = in_bytes * d.out_c;
  cb.input_tile_bytes = max_run;
}

// Output: results collect on chip and go back as one run when the next strip does not continue
// them in DDR (never, within a channel slice in raster order) or the buffer would overflow.
void cost_pool_stream(const abi::LayerDesc& d, uint64_t tile_c, uint64_t burst, CostBreakdown& cb) {
  cost_pool_input(d, tile_c, burst, cb);
  // Output runs: the strips' results packed greedily into the output buffer.
  uint64_t pending = 0;
  for (uint64_t row = 0; row < static_cast<uint64_t>(d.out_c) * d.out_h; ++row) {
    for (uint64_t c0 = 0; c0 < d.out_w; c0 += tile_c) {
      const uint64_t count = std::min<uint64_t>(tile_c, d.out_w - c0);
      if (pending + count > abi::kPoolLineBytes) {
        cb.output_bytes += add_runs(cb, 1, pending, burst);
        pending = 0;
      }
      pending += count;
    }
  }
  if (pending > 0) cb.output_bytes += add_runs(cb, 1, pending, burst);
  cb.steps = static_cast<uint64_t>(d.out_c) * d.out_h * ceil_div(d.out_w, tile_c);
  cb.output_tile_bytes =
      tile_c * 4 + std::min<uint64_t>(abi::kPoolLineBytes, static_cast<uint64_t>(d.out_c) * d.out_h * d.out_w);
  cb.macs = static_cast<uint64_t>(d.out_c) * d.out_h * d.out_w * d.pool_h * d.pool_w;
}

// kernels/accel_add.h: the requantisation is per tensor and each input's and the output's
// out_c x out_h x out_w channel slice is one contiguous block, streamed flat in chunks of
// tile_r x tile_c bytes: two read runs and one write run per chunk, whatever the plane size.
void cost_add_stream(const abi::LayerDesc& d, uint64_t tile_c, uint64_t burst, CostBreakdown& cb) {
  const uint64_t block = static_cast<uint64_t>(d.out_c) * d.out_h * d.out_w;
  const uint64_t chunk =
      std::max<uint64_t>(1, std::min<uint64_t>(block, static_cast<uint64_t>(std::max(1u, d.tile_r)) * tile_c));
  const uint64_t chunks = ceil_div(block, chunk), last = block - (chunks - 1) * chunk;
  for (int input = 0; input < 2; ++input) {
    cb.input_bytes += add_runs(cb, chunks - 1, chunk, burst) + add_runs(cb, 1, last, burst);
  }
  cb.output_bytes = add_runs(cb, chunks - 1, chunk, burst) + add_runs(cb, 1, last, burst);
  cb.steps = chunks;
  cb.input_tile_bytes = 2 * chunk;
  cb.output_tile_bytes = chunk;
  cb.macs = block;
}

}  // namespace

CostBreakdown evaluate_stream(const abi::LayerDesc& d, const BoardProfile& b, DramModel model) {
  CostBreakdown cb;
  const uint64_t tile_c = std::max(1u, d.tile_c), burst = b.burst_bytes;
  if (d.op == abi::kOpPool) {
    cost_pool_stream(d, tile_c, burst, cb);
  } else {
    cost_add_stream(d, tile_c, burst, cb);
  }
  cb.footprint_bytes = cb.input_tile_bytes + cb.output_tile_bytes;
  cb.ddr_bytes = cb.input_bytes + cb.output_bytes;
  cb.cus_used = 1;
  // One window element (pool) or one sum (add) per lane and cycle.
  cb.mac_cycles = static_cast<double>(ceil_div(cb.macs, b.mac_lanes));
  finish_cost(cb, b, model);
  return cb;
}

Result<ModelPlan> plan_layers(std::span<const abi::LayerDesc> layers, std::span<const std::string> names,
                              const BoardProfile& board, const PlanOptions& options) {
  if (names.size() != layers.size()) return Status::invalid_argument("plan_layers: one name per layer");
  ModelPlan plan;
  plan.board = board;
  plan.options = options;
  const BoardProfile b = effective_board(board, options.space);
  const SearchOptions search = search_options(options);
  for (size_t i = 0; i < layers.size(); ++i) {
    LayerPlan lp = start_layer(layers[i], names[i], b);
    if (lp.desc.op == abi::kOpConv) {
      auto found = search_tiles(lp.desc, b, search);
      if (!found.is_ok()) return Status(found.status().code(), "layer '" + lp.name + "': " + found.status().message());
      lp.searched = true;
      lp.candidate = found->candidate;
      lp.cost = found->cost;
      lp.evaluated = found->evaluated;
      lp.pruned = found->pruned;
      lp.search_ms = found->search_ms;
      // Explore-space choices (other schedules, wider tiles) are studied, not executed: the
      // descriptor keeps tiles only when the kernel can run them.
      if (options.space == SearchSpace::kKernel) set_tiles(lp.desc, found->candidate.tile);
    } else {
      TESSERA_RETURN_IF_ERROR(plan_stream_layer(lp, b, options.dram));
    }
    plan.layers.push_back(std::move(lp));
  }
  return plan;
}

Result<ModelPlan> plan_with_choices(std::span<const abi::LayerDesc> layers, std::span<const std::string> names,
                                    const BoardProfile& board, const PlanOptions& options,
                                    std::span<const Candidate> choices) {
  if (names.size() != layers.size() || choices.size() != layers.size()) {
    return Status::invalid_argument("plan_with_choices: one name and one choice per layer");
  }
  ModelPlan plan;
  plan.board = board;
  plan.options = options;
  const BoardProfile b = effective_board(board, options.space);
  for (size_t i = 0; i < layers.size(); ++i) {
    LayerPlan lp = start_layer(layers[i], names[i], b);
    lp.candidate = choices[i];
    if (lp.desc.op == abi::kOpConv) {
      const ConvGeometry g = conv_geometry(lp.desc);
      if (!tile_allowed(lp.desc, g, b, choices[i].tile, options.space == SearchSpace::kKernel)) {
        return Status::invalid_argument("layer '" + lp.name + "': the given tile does not fit board '" + b.name + "'");
      }
      lp.searched = true;
      lp.cost = evaluate(g, b, lp.candidate, options.dram);
      if (options.space == SearchSpace::kKernel) set_tiles(lp.desc, choices[i].tile);
    } else {
      TESSERA_RETURN_IF_ERROR(plan_stream_layer(lp, b, options.dram));
    }
    plan.layers.push_back(std::move(lp));
  }
  return plan;
}

ModelPlan rescore(const ModelPlan& plan, DramModel model) {
  ModelPlan out = plan;
  out.options.dram = model;
  const BoardProfile b = effective_board(plan.board, plan.options.space);
  for (LayerPlan& lp : out.layers) {
    lp.cost =
        lp.searched ? evaluate(conv_geometry(lp.desc), b, lp.candidate, model) : evaluate_stream(lp.desc, b, model);
  }
  return out;
}

double ModelPlan::cycles() const {
  double c = 0;
  for (const LayerPlan& l : layers) c += l.cost.total_cycles;
  return c;
}

uint64_t ModelPlan::ddr_bytes() const {
  uint64_t v = 0;
  for (const LayerPlan& l : layers) v += l.cost.ddr_bytes;
  return v;
}

uint64_t ModelPlan::bursts() const {
  uint64_t v = 0;
  for (const LayerPlan& l : layers) v += l.cost.bursts;
  return v;
}

uint64_t ModelPlan::macs() const {
  uint64_t v = 0;
  for (const LayerPlan& l : layers) v += l.searched ? l.cost.macs : 0;
  return v;
}

double ModelPlan::energy_uj() const {
  double v = 0;
  for (const LayerPlan& l : layers) v += l.cost.energy_uj;
  return v;
}

double ModelPlan::search_ms() const {
  double v = 0;
  for (const LayerPlan& l : layers) v += l.search_ms;
  return v;
}

uint32_t ModelPlan::compute_units() const { return effective_board(board, options.space).compute_units; }

double ModelPlan::seconds_per_image() const { return cycles() / (board.fabric_clock_mhz * 1e6); }

double ModelPlan::images_per_second() const {
  const double s = seconds_per_image();
  return s > 0 ? 1.0 / s : 0;
}

double ModelPlan::gops() const {
  const double s = seconds_per_image();
  return s > 0 ? 2.0 * static_cast<double>(macs()) / s / 1e9 : 0;
}

double ModelPlan::peak_gops() const {
  return 2.0 * static_cast<double>(board.macs_per_cycle()) * compute_units() * board.fabric_clock_mhz * 1e6 / 1e9;
}

double ModelPlan::watts() const {
  const double s = seconds_per_image();
  return s > 0 ? energy_uj() * 1e-6 / s : 0;
}

ProgramModel program_model(const ModelPlan& plan) {
  ProgramModel m;
  m.board = plan.board.name;
  m.clock_mhz = plan.board.fabric_clock_mhz;
  for (const LayerPlan& l : plan.layers) {
    m.layers.push_back({static_cast<uint64_t>(std::ceil(l.cost.total_cycles)), l.cost.ddr_bytes, l.cost.energy_uj});
  }
  return m;
}

}  // namespace tessera::plan
