#include "client/plan/plan_table.h"

#include <algorithm>

#include "accel/plan/resource_estimate.h"
#include "client/plan/text_table.h"

namespace tessera::client {
namespace {

using Align = TextTable::Align;

// Layer names longer than this keep their end ("...features.12/Conv").
constexpr size_t kNameWidth = 28;

double mb(uint64_t bytes) { return static_cast<double>(bytes) / 1e6; }

std::string us_text(double us) { return us < 10 ? format("%.2f", us) : format("%.1f", us); }

std::string mb_text(uint64_t bytes) { return format("%.3f", mb(bytes)); }

void print_header(std::ostream& out, const PlanReport& r) {
  const plan::BoardProfile& b = r.board;
  const plan::PlanOptions& o = r.plan.options;
  const uint32_t cus = plan::effective_board(b, o.space).compute_units;
  out << r.model << " (" << r.source << ") on " << b.name << ": "
      << format("%.0f MHz, %u CU%s of %ux%u int8 MACs, DDR %.1f GB/s, tile budget %.0f KiB", b.fabric_clock_mhz, cus,
                cus == 1 ? "" : "s", b.mac_lanes, b.mac_channels, plan::effective_board(b, o.space).ddr_gbps,
                static_cast<double>(b.tile_budget_bytes()) / 1024.0)
      << "\n";
  const plan::BoardProfile kb = plan::effective_board(b, plan::SearchSpace::kKernel);
  const uint32_t instances = std::max(1u, b.kernel_instances);
  out << format("  fabric: %u x %u = %llu int8 MACs/cycle x %u kernel instance%s x %.0f MHz x 2 = %.1f GOP/s peak%s\n",
                kb.mac_lanes, kb.mac_channels, static_cast<unsigned long long>(kb.macs_per_cycle()), instances,
                instances == 1 ? "" : "s", kb.fabric_clock_mhz,
                2.0 * kb.macs_per_cycle() * instances * kb.fabric_clock_mhz / 1e3,
                instances == 1 ? "" : " (batches side by side; one image runs on one instance)");
  if (!b.part.empty()) {
    const plan::ResourceEstimate e = plan::estimate_resources(b);
    out << "  resources (estimate) on " << b.part << ": " << plan::resource_summary(e)
        << (e.fits() ? "\n" : format(" -- DOES NOT FIT within %.0f%%\n", 100 * plan::kMaxResourceUse));
  }
  out << "  options: space " << plan::search_space_name(o.space) << ", objective " << plan::objective_name(o.objective)
      << ", DRAM model " << plan::dram_model_name(o.dram) << (o.naive ? ", naive tiles" : "") << "\n";
  if (!r.fabric_summary.empty()) out << "  fabric: " << r.fabric_summary << "\n";
  out << "  where it runs: " << r.placement.line() << "\n";
}

void print_layers(std::ostream& out, const PlanReport& r) {
  TextTable t({{"#"},
               {"layer", Align::kLeft},
               {"op", Align::kLeft},
               {"shape (in -> out)", Align::kLeft},
               {"tile m/n/r/c", Align::kLeft},
               {"sched", Align::kLeft},
               {"part", Align::kLeft},
               {"OCM"},
               {"DDR MB"},
               {"µs"},
               {"bound", Align::kLeft},
               {"MAC"}});
  for (size_t i = 0; i < r.plan.layers.size(); ++i) {
    const plan::LayerPlan& l = r.plan.layers[i];
    const auto util = mac_utilization(l, r.plan);
    t.add_row({std::to_string(i), truncate_front(l.name, kNameWidth), layer_op_name(l.desc), layer_shape(l.desc),
               tile_text(l.candidate.tile), l.searched ? plan::schedule_name(l.candidate.schedule) : "-",
               l.searched ? plan::partition_name(l.candidate.partition) : "-", format("%.0f%%", 100 * l.ocm_use()),
               mb_text(l.cost.ddr_bytes), us_text(layer_us(l, r.board)), l.cost.memory_bound ? "memory" : "compute",
               util ? format("%.0f%%", 100 * *util) : "-"});
  }
  t.print(out);
  const bool any_fold = std::any_of(r.plan.layers.begin(), r.plan.layers.end(),
                                    [](const plan::LayerPlan& l) { return l.candidate.tile.fold_rows; });
  if (any_fold) out << "  fold: the kernel window folded into the MAC vector (input rows at a padded pitch)\n";
}

void print_totals(std::ostream& out, const PlanReport& r) {
  const plan::ModelPlan& p = r.plan;
  const size_t searched = searched_layers(p);
  const double us = plan_us(p, r.board);
  const double peak = p.layers.empty() ? 0 : p.peak_gops();
  out << "totals: " << p.layers.size() << " layers (" << searched << " conv searched, " << p.layers.size() - searched
      << " pool/add streamed)\n";
  out << format("  throughput  %.1f images/s modeled (%s µs/image)\n", p.images_per_second(), us_text(us).c_str());
  out << format("  compute     %.1f GOP/s = %.1f%% of the fabric's %.1f GOP/s peak\n", p.gops(),
                100 * ratio(p.gops(), peak), peak);
  out << format("  power       %.2f W modeled, %.3f mJ/image\n", p.watts(), p.energy_uj() / 1e3);
  out << format("  DDR         %.3f MB/image, %llu bursts of %u B\n", mb(p.ddr_bytes()),
                static_cast<unsigned long long>(p.bursts()), r.board.burst_bytes);
  if (!p.handovers.empty()) {
    uint64_t bytes = 0;
    for (const plan::HandoverPlan& h : p.handovers) bytes += h.cost.ddr_bytes;
    out << format("  hand-overs  %zu round trips through the host: %s µs/image, %.3f MB/image of DDR (in the totals)\n",
                  p.handovers.size(), us_text(p.handover_cycles() / r.board.fabric_clock_mhz).c_str(), mb(bytes));
  }
  if (r.from_cache) {
    out << format("  plan        from cache %s (search skipped; planned in %.1f ms)\n",
                  r.cache_dir.empty() ? "(memory)" : r.cache_dir.c_str(), r.wall_ms);
  } else {
    out << format("  plan        searched: tile search %.1f ms, import + compile + search %.1f ms%s%s\n", p.search_ms(),
                  r.wall_ms, r.cache_dir.empty() ? "" : ", cache ", r.cache_dir.c_str());
  }
  out << format("  board       %s, fabric clock %.0f MHz\n", r.board.name.c_str(), r.board.fabric_clock_mhz);
  out << "  caveat      modeled from the board profile (" << plan::boards_dir() << "/" << r.board.name
      << ".toml), not measured;\n              fabric layers and hand-overs only (the host ops' modeled share: \"where "
         "it runs\")\n";
}

// seeds/000: naive tiles (the fullest tile set) against the search's.
void print_naive(std::ostream& out, const PlanReport& r) {
  out << "\nnaive tiling (seeds/000: the fullest tile set, >= 80% of the budget where the layer allows) vs the plan:\n";
  TextTable t({{"#"},
               {"layer", Align::kLeft},
               {"tile", Align::kLeft},
               {"OCM"},
               {"naive tile", Align::kLeft},
               {"OCM"},
               {"DDR MB"},
               {"naive MB"},
               {"DDR x"},
               {"µs"},
               {"naive µs"},
               {"time x"}});
  for (size_t i = 0; i < r.plan.layers.size(); ++i) {
    const plan::LayerPlan &l = r.plan.layers[i], &n = r.other.layers[i];
    const double us = layer_us(l, r.board), nus = layer_us(n, r.board);
    t.add_row({std::to_string(i), truncate_front(l.name, kNameWidth), tile_text(l.candidate.tile),
               format("%.0f%%", 100 * l.ocm_use()), tile_text(n.candidate.tile), format("%.0f%%", 100 * n.ocm_use()),
               mb_text(l.cost.ddr_bytes), mb_text(n.cost.ddr_bytes),
               format("%.2f", ratio(static_cast<double>(n.cost.ddr_bytes), static_cast<double>(l.cost.ddr_bytes))),
               us_text(us), us_text(nus), format("%.2f", ratio(nus, us))});
  }
  t.print(out);
  const double us = plan_us(r.plan, r.board), nus = plan_us(r.other, r.board);
  out << format("  naive: DDR %.3f MB/image = %.2fx the plan's %.3f MB; time %s µs = %.2fx; energy %.3f mJ = %.2fx\n",
                mb(r.other.ddr_bytes()),
                ratio(static_cast<double>(r.other.ddr_bytes()), static_cast<double>(r.plan.ddr_bytes())),
                mb(r.plan.ddr_bytes()), us_text(nus).c_str(), ratio(nus, us), r.other.energy_uj() / 1e3,
                ratio(r.other.energy_uj(), r.plan.energy_uj()));
}

// TSO (seeds/002): tiles picked by the volume-only DRAM model, timed by the burst-aware one.
void print_noburst(std::ostream& out, const PlanReport& r) {
  out << "\nTSO-noburst (tiles chosen by the volume-only DRAM model, timed with bursts) vs the burst-aware plan:\n";
  TextTable t({{"#"},
               {"layer", Align::kLeft},
               {"tile", Align::kLeft},
               {"noburst tile", Align::kLeft},
               {"µs"},
               {"noburst µs"},
               {"slower"}});
  for (size_t i = 0; i < r.plan.layers.size(); ++i) {
    const plan::LayerPlan &l = r.plan.layers[i], &n = r.other.layers[i];
    const double us = layer_us(l, r.board), nus = layer_us(n, r.board);
    t.add_row({std::to_string(i), truncate_front(l.name, kNameWidth), tile_text(l.candidate.tile),
               tile_text(n.candidate.tile), us_text(us), us_text(nus), format("%+.1f%%", 100 * (ratio(nus, us) - 1))});
  }
  t.print(out);
  const double us = plan_us(r.plan, r.board), nus = plan_us(r.other, r.board);
  out << format("  noburst: %s µs/image vs %s µs/image: %+.1f%% slower in total (objective %s)\n", us_text(nus).c_str(),
                us_text(us).c_str(), 100 * (ratio(nus, us) - 1), plan::objective_name(r.plan.options.objective));
}

}  // namespace

void print_plan_report(std::ostream& out, const PlanReport& r) {
  print_header(out, r);
  if (r.plan.layers.empty()) {
    out << "  no fabric layers: the whole model runs on the host, nothing to plan\n";
    return;
  }
  print_layers(out, r);
  print_totals(out, r);
  if (r.compare == CompareKind::kNaive) print_naive(out, r);
  if (r.compare == CompareKind::kNoBurst) print_noburst(out, r);
}

}  // namespace tessera::client
