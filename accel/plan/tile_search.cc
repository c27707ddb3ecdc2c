#include "accel/plan/tile_search.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <set>
#include <thread>

namespace tessera::plan {
namespace {

struct Scored {
  bool valid = false;
  Candidate cand;
  CostBreakdown cost;
};

double primary(const CostBreakdown& c, Objective o) {
  switch (o) {
    case Objective::kTime: return c.total_cycles;
    case Objective::kDdrBytes: return static_cast<double>(c.ddr_bytes);
    case Objective::kEnergy: return c.energy_uj;
  }
  return c.total_cycles;
}
double secondary(const CostBreakdown& c, Objective o) {
  return o == Objective::kTime ? static_cast<double>(c.ddr_bytes) : c.total_cycles;
}

// Strict total order on candidates, so every search order (threads, pruning) picks the same one.
bool better(const Scored& a, const Scored& b, Objective o) {
  if (!b.valid) return a.valid;
  if (!a.valid) return false;
  if (primary(a.cost, o) != primary(b.cost, o)) return primary(a.cost, o) < primary(b.cost, o);
  if (secondary(a.cost, o) != secondary(b.cost, o)) return secondary(a.cost, o) < secondary(b.cost, o);
  const TileShape &x = a.cand.tile, &y = b.cand.tile;
  if (x.m != y.m) return x.m > y.m;
  if (x.n != y.n) return x.n > y.n;
  if (x.r != y.r) return x.r > y.r;
  if (x.c != y.c) return x.c > y.c;
  if (x.fold_rows != y.fold_rows) return x.fold_rows;
  if (a.cand.schedule != b.cand.schedule) return a.cand.schedule < b.cand.schedule;
  return a.cand.partition < b.cand.partition;
}

// Lower bound of the primary metric over every schedule/partition of a tile.
double lower_bound(const ConvGeometry& g, const BoardProfile& b, const TileShape& t, Objective o) {
  switch (o) {
    case Objective::kTime: return lower_bound_cycles(g, b, t);
    case Objective::kDdrBytes: return static_cast<double>(compulsory_bytes(g));
    case Objective::kEnergy: return lower_bound_energy_uj(g, b, t);
  }
  return 0;
}

constexpr Schedule kSchedules[] = {Schedule::kInputStationary, Schedule::kOutputStationary,
                                   Schedule::kWeightStationary};

std::vector<PartitionKind> partitions(const BoardProfile& b, bool skip_redundant) {
  std::vector<PartitionKind> p = {PartitionKind::kKs};
  // With one CU every partition is the whole layer: KS wins the tie, OFM need not be costed.
  if (b.compute_units > 1 || !skip_redundant) p.push_back(PartitionKind::kOfm);
  if (b.compute_units >= 4) p.push_back(PartitionKind::kKsOfm);
  return p;
}

// Costs every schedule x partition of one tile into `best`.
void try_tile(const ConvGeometry& g, const BoardProfile& b, const TileShape& t, const std::vector<PartitionKind>& parts,
              const SearchOptions& opts, Scored& best, uint64_t& evaluated) {
  for (Schedule s : kSchedules) {
    if (opts.schedule && *opts.schedule != s) continue;
    if (opts.kernel_orders && !kernel_runs(g, t, s)) continue;
    for (PartitionKind p : parts) {
      Scored sc{true, Candidate{t, s, p}, {}};
      sc.cost = evaluate(g, b, sc.cand, opts.model);
      ++evaluated;
      if (better(sc, best, opts.objective)) best = sc;
    }
  }
}

struct Space {
  ConvGeometry g;
  std::vector<uint32_t> ms, ns, rs, cs;
};

Result<Space> make_space(const abi::LayerDesc& d, const BoardProfile& b, const SearchOptions& opts) {
  if (d.op != abi::kOpConv) return Status::invalid_argument("tile search: only conv layers are searched");
  if (d.groups < 1 || d.in_c % d.groups != 0 || d.out_c % d.groups != 0 || d.out_h < 1 || d.out_w < 1)
    return Status::invalid_argument("tile search: malformed conv descriptor");
  if (b.compute_units < 1 || b.mac_lanes < 1 || b.mac_channels < 1 || b.burst_bytes < 1)
    return Status::invalid_argument("tile search: board profile '" + b.name + "' is incomplete");
  Space s{conv_geometry(d), {}, {}, {}, {}};
  const bool lim = opts.abi_limits;
  s.ms = tile_values(d.out_c, lim ? std::min(d.out_c, abi::kMaxTileM) : d.out_c);
  s.ns = tile_values(d.in_c / d.groups, lim ? std::min(d.in_c / d.groups, abi::kMaxTileN) : d.in_c / d.groups);
  s.rs = tile_values(d.out_h, lim ? std::min(d.out_h, abi::kMaxTileR) : d.out_h);
  s.cs = tile_values(d.out_w, lim ? std::min(d.out_w, abi::kMaxTileC) : d.out_w);
  return s;
}

Status no_fit(const abi::LayerDesc& d, const BoardProfile& b) {
  return Status::invalid_argument("tile search: no tile of the " + std::to_string(d.kernel_h) + "x" +
                                  std::to_string(d.kernel_w) + " conv fits board '" + b.name + "'");
}

// Seeds/000 sec. 6.1: the fullest tile set, then its best schedule/partition.
Result<TilePlan> naive_plan(const abi::LayerDesc& d, const BoardProfile& b, const SearchOptions& opts, const Space& s) {
  const auto parts = partitions(b, true);
  TileShape pick;
  uint64_t pick_fp = 0;
  for (uint32_t m : s.ms)
    for (uint32_t n : s.ns)
      for (uint32_t r : s.rs)
        for (uint32_t c : s.cs) {
          const TileShape t{m, n, r, c};
          if (!tile_allowed(d, s.g, b, t, opts.abi_limits)) continue;
          const uint64_t fp = tile_footprint(s.g, t);
          // Loops run in increasing order: ">=" keeps the lexicographically largest of equals.
          if (fp >= pick_fp) {
            pick_fp = fp;
            pick = t;
          }
        }
  if (pick_fp == 0) return no_fit(d, b);
  Scored best;
  TilePlan plan;
  try_tile(s.g, b, pick, parts, opts, best, plan.evaluated);
  plan.candidate = best.cand;
  plan.cost = best.cost;
  return plan;
}

Result<TilePlan> run_search(const abi::LayerDesc& d, const BoardProfile& b, const SearchOptions& opts, bool brute) {
  const auto start = std::chrono::steady_clock::now();
  TESSERA_ASSIGN_OR_RETURN(Space s, make_space(d, b, opts));
  TilePlan plan;
  if (opts.naive) {
    TESSERA_ASSIGN_OR_RETURN(plan, naive_plan(d, b, opts, s));
  } else {
    const auto parts = partitions(b, !brute);
    struct Local {
      Scored best;
      uint64_t evaluated = 0, pruned = 0;
    };
    // One tile_m value at a time, per worker (TSO, seeds/002 sec. IV-A, parallelises per layer).
    auto work_m = [&](uint32_t m, Local& l) {
      for (uint32_t n : s.ns)
        for (uint32_t r : s.rs)
          for (uint32_t c : s.cs)
            for (bool fold_rows : {false, true}) {
              const TileShape t{m, n, r, c, fold_rows};
              if (fold_rows && !kernel_folds_rows(s.g, t)) continue;
              if (!tile_allowed(d, s.g, b, t, opts.abi_limits)) continue;
              if (!brute && l.best.valid &&
                  lower_bound(s.g, b, t, opts.objective) > primary(l.best.cost, opts.objective)) {
                ++l.pruned;
                continue;
              }
              try_tile(s.g, b, t, parts, opts, l.best, l.evaluated);
            }
    };
    std::vector<Local> locals;
    if (brute) {
      locals.resize(1);
      for (uint32_t m : s.ms) work_m(m, locals[0]);
    } else {
      unsigned threads = opts.threads ? opts.threads : std::max(1u, std::thread::hardware_concurrency());
      threads = std::min<unsigned>(threads, static_cast<unsigned>(s.ms.size()));
      locals.resize(threads);
      std::atomic<size_t> next{0};
      auto worker = [&](Local& l) {
        for (size_t i = next++; i < s.ms.size(); i = next++) work_m(s.ms[i], l);
      };
      if (threads <= 1) {
        worker(locals[0]);
      } else {
        std::vector<std::thread> pool;
        for (unsigned i = 0; i < threads; ++i) pool.emplace_back(worker, std::ref(locals[i]));
        for (auto& th : pool) th.join();
      }
    }
    Scored best;
    for (const Local& l : locals) {
      if (better(l.best, best, opts.objective)) best = l.best;
      plan.evaluated += l.evaluated;
      plan.pruned += l.pruned;
    }
    if (!best.valid) return no_fit(d, b);
    plan.candidate = best.cand;
    plan.cost = best.cost;
  }
  plan.search_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return plan;
}

}  // namespace

std::vector<uint32_t> tile_values(uint32_t extent, uint32_t cap) {
  std::set<uint32_t> v;
  cap = std::max(1u, std::min(cap, extent));
  for (uint32_t x = 1; x <= cap; ++x)
    if (extent % x == 0) v.insert(x);
  const uint32_t k0 = (extent + cap - 1) / cap;
  for (uint32_t k = k0; k < k0 + 8 && k <= extent; ++k) v.insert((extent + k - 1) / k);
  for (uint32_t p = 1; p <= cap; p *= 2) v.insert(p);
  v.insert(cap);
  return {v.begin(), v.end()};
}

bool kernel_runs(const ConvGeometry& g, const TileShape& t, Schedule s) {
  if (s == Schedule::kOutputStationary) return true;
  return s == Schedule::kInputStationary && g.groups == 1 && t.n >= g.in_per_group();
}

bool kernel_folds_rows(const ConvGeometry& g, const TileShape& t) {
  return g.groups == 1 && g.kernel_h > 1 && g.dilation_h == 1 && g.dilation_w == 1 &&
         t.n * g.kernel_h * g.kernel_w <= abi::kMaxVector;
}

bool tile_allowed(const abi::LayerDesc& d, const ConvGeometry& g, const BoardProfile& board, const TileShape& t,
                  bool abi_limits) {
  if (t.fold_rows && !kernel_folds_rows(g, t)) return false;
  if (abi_limits) {
    abi::LayerDesc x = d;
    x.tile_m = t.m;
    x.tile_n = t.n;
    x.tile_r = t.r;
    x.tile_c = t.c;
    x.fold_rows = t.fold_rows ? 1 : 0;
    x.loop_order = abi::kLoopOutputStationary;  // the tile's fit; kernel_runs() checks the order
    if (!abi::layer_fits(x)) return false;
  } else {
    const uint32_t opg = g.out_per_group();
    if (t.n > g.in_per_group() || (g.groups > 1 && opg % t.m != 0 && t.m % opg != 0)) return false;
  }
  // Double buffering: one set of tiles within half the on-chip memory (seeds/000 sec. 4.2).
  return tile_footprint(g, t) <= board.tile_budget_bytes();
}

Result<TilePlan> search_tiles(const abi::LayerDesc& d, const BoardProfile& board, const SearchOptions& opts) {
  return run_search(d, board, opts, false);
}

Result<TilePlan> search_tiles_brute_force(const abi::LayerDesc& d, const BoardProfile& board,
                                          const SearchOptions& opts) {
  return run_search(d, board, opts, true);
}

void apply_plan(abi::LayerDesc& d, const TilePlan& plan) { apply_candidate(d, plan.candidate); }

void apply_candidate(abi::LayerDesc& d, const Candidate& c) {
  d.tile_m = c.tile.m;
  d.tile_n = c.tile.n;
  d.tile_r = c.tile.r;
  d.tile_c = c.tile.c;
  // Input stationary where the kernel runs it; any other schedule's tiles run output stationary.
  const bool stationary_input =
      c.schedule == Schedule::kInputStationary && kernel_runs(conv_geometry(d), c.tile, Schedule::kInputStationary);
  d.loop_order = stationary_input ? abi::kLoopInputStationary : abi::kLoopOutputStationary;
  d.fold_rows = c.tile.fold_rows ? 1 : 0;
}

}  // namespace tessera::plan
