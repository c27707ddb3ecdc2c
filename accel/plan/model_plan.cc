#include "accel/plan/model_plan.h"

#include <algorithm>
#include <cmath>

#include "accel/plan/compiler.h"
#include "accel/plan/kernel_cycles.h"

namespace tessera::plan {
namespace {

SearchOptions search_options(const PlanOptions& o) {
  SearchOptions s;
  s.model = o.dram;
  s.naive = o.naive;
  s.objective = o.objective;
  s.threads = o.threads;
  // The kernel executes output- or input-stationary tiles within abi::layer_fits
  // (kernels/accel_conv.h); the explore space lifts both, keeping only the board's budget.
  s.kernel_orders = o.space == SearchSpace::kKernel;
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
  if (space == SearchSpace::kKernel) {
    b.compute_units = 1;
    if (board.instance_ddr_gbps > 0) b.ddr_gbps = board.instance_ddr_gbps;
  }
  return b;
}

namespace {}  // namespace

CostBreakdown evaluate_stream(const abi::LayerDesc& d, const BoardProfile& b, DramModel model) {
  CostBreakdown cb;
  if (d.op == abi::kOpPool) {
    kernel_pool_cost(d, b, cb);  // the conv engine's tiles, loops and traffic (kernel_cycles.h)
  } else {
    kernel_add_cost(d, b, cb);  // kernel_cycles.h
  }
  cb.footprint_bytes = cb.input_tile_bytes + cb.output_tile_bytes;
  cb.ddr_bytes = cb.input_bytes + cb.output_bytes + cb.quant_bytes;
  cb.cus_used = 1;
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
      if (options.space == SearchSpace::kKernel) apply_candidate(lp.desc, found->candidate);
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
      const bool kernel = options.space == SearchSpace::kKernel;
      if (!tile_allowed(lp.desc, g, b, choices[i].tile, kernel) ||
          (kernel && !kernel_runs(g, choices[i].tile, choices[i].schedule))) {
        return Status::invalid_argument("layer '" + lp.name + "': the given tile does not fit board '" + b.name + "'");
      }
      lp.searched = true;
      lp.cost = evaluate(g, b, lp.candidate, options.dram);
      if (kernel) apply_candidate(lp.desc, choices[i]);
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
  for (HandoverPlan& h : out.handovers) h.cost = evaluate_handover(h.bytes_out, h.bytes_in, b, model);
  return out;
}

void ModelPlan::add_handover(std::string from, std::string to, uint64_t bytes_out, uint64_t bytes_in) {
  HandoverPlan h{std::move(from), std::move(to), bytes_out, bytes_in, {}};
  h.cost = evaluate_handover(bytes_out, bytes_in, effective_board(board, options.space), options.dram);
  handovers.push_back(std::move(h));
}

double ModelPlan::handover_cycles() const {
  double c = 0;
  for (const HandoverPlan& h : handovers) c += h.cost.total_cycles;
  return c;
}

double ModelPlan::cycles() const {
  double c = handover_cycles();
  for (const LayerPlan& l : layers) c += l.cost.total_cycles;
  return c;
}

uint64_t ModelPlan::ddr_bytes() const {
  uint64_t v = 0;
  for (const LayerPlan& l : layers) v += l.cost.ddr_bytes;
  for (const HandoverPlan& h : handovers) v += h.cost.ddr_bytes;
  return v;
}

uint64_t ModelPlan::bursts() const {
  uint64_t v = 0;
  for (const LayerPlan& l : layers) v += l.cost.bursts;
  for (const HandoverPlan& h : handovers) v += h.cost.bursts;
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
  for (const HandoverPlan& h : handovers) v += h.cost.energy_uj;
  // Each layer's cost charges the board's static power for its time; instances side by side
  // share it, so an image carries 1 / instances of that share.
  const double n = instances();
  return v - board.static_watts * seconds_per_image() * 1e6 * (n - 1) / n;
}

double ModelPlan::search_ms() const {
  double v = 0;
  for (const LayerPlan& l : layers) v += l.search_ms;
  return v;
}

uint32_t ModelPlan::compute_units() const { return effective_board(board, options.space).compute_units; }

uint32_t ModelPlan::instances() const {
  return options.space == SearchSpace::kKernel ? std::max(1u, board.kernel_instances) : 1;
}

double ModelPlan::seconds_per_image() const { return cycles() / (board.fabric_clock_mhz * 1e6); }

double ModelPlan::images_per_second() const {
  const double s = seconds_per_image();
  return s > 0 ? instances() / s : 0;
}

double ModelPlan::gops() const { return 2.0 * static_cast<double>(macs()) * images_per_second() / 1e9; }

double ModelPlan::peak_gops() const {
  return 2.0 * static_cast<double>(board.macs_per_cycle()) * compute_units() * instances() * board.fabric_clock_mhz *
         1e6 / 1e9;
}

double ModelPlan::watts() const { return energy_uj() * 1e-6 * images_per_second(); }

ProgramModel program_model(const ModelPlan& plan, size_t first, size_t count) {
  ProgramModel m;
  m.board = plan.board.name;
  m.clock_mhz = plan.board.fabric_clock_mhz;
  for (size_t i = first; i < plan.layers.size() && i - first < count; ++i) {
    const LayerPlan& l = plan.layers[i];
    m.layers.push_back({static_cast<uint64_t>(std::ceil(l.cost.total_cycles)), l.cost.ddr_bytes, l.cost.energy_uj});
  }
  return m;
}

}  // namespace tessera::plan
