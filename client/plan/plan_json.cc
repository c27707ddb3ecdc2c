#include "client/plan/plan_json.h"

namespace tessera::client {
namespace {

using nlohmann::json;

json tile_json(const plan::TileShape& t) {
  return {{"m", t.m}, {"n", t.n}, {"r", t.r}, {"c", t.c}, {"fold_rows", t.fold_rows}};
}

json layer_json(size_t index, const plan::LayerPlan& l, const PlanReport& r) {
  const abi::LayerDesc& d = l.desc;
  const plan::CostBreakdown& c = l.cost;
  const auto util = mac_utilization(l, r.plan);
  json j = {{"index", index},
            {"name", l.name},
            {"op", layer_op_name(d)},
            {"shape", layer_shape(d)},
            {"in", {d.in_c, d.in_h, d.in_w}},
            {"out", {d.out_c, d.out_h, d.out_w}},
            {"searched", l.searched},
            {"tile", tile_json(l.candidate.tile)},
            {"schedule", l.searched ? json(plan::schedule_name(l.candidate.schedule)) : json(nullptr)},
            {"partition", l.searched ? json(plan::partition_name(l.candidate.partition)) : json(nullptr)},
            {"footprint_bytes", c.footprint_bytes},
            {"budget_bytes", l.budget_bytes},
            {"ocm_use", l.ocm_use()},
            {"ddr_bytes", c.ddr_bytes},
            {"input_bytes", c.input_bytes},
            {"weight_bytes", c.weight_bytes},
            {"quant_bytes", c.quant_bytes},
            {"output_bytes", c.output_bytes},
            {"dma_calls", c.dma_calls},
            {"dma_runs", c.dma_runs},
            {"bursts", c.bursts},
            {"macs", c.macs},
            {"mac_cycles", c.mac_cycles},
            {"dram_cycles", c.dram_cycles},
            {"cycles", c.total_cycles},
            {"us", layer_us(l, r.board)},
            {"bound", c.memory_bound ? "memory" : "compute"},
            {"mac_utilization", util ? json(*util) : json(nullptr)},
            {"energy_uj", c.energy_uj}};
  if (d.op == abi::kOpConv) {
    j["kernel"] = {d.kernel_h, d.kernel_w};
    j["stride"] = {d.stride_h, d.stride_w};
    j["groups"] = d.groups;
  }
  return j;
}

json totals_json(const PlanReport& r) {
  const plan::ModelPlan& p = r.plan;
  const double us = plan_us(p, r.board);
  const double peak = p.layers.empty() ? 0 : p.peak_gops();
  return {{"layers", p.layers.size()},
          {"searched_layers", searched_layers(p)},
          {"cycles", p.cycles()},
          {"us", us},
          {"images_per_second", p.images_per_second()},  // all kernel instances; `us` is one image's
          {"macs", p.macs()},
          {"gops", p.gops()},
          {"peak_gops", peak},
          {"peak_fraction", ratio(p.gops(), peak)},
          {"watts", p.watts()},
          {"energy_uj", p.energy_uj()},
          {"mj_per_image", p.energy_uj() / 1e3},
          {"ddr_bytes", p.ddr_bytes()},
          {"ddr_mb", static_cast<double>(p.ddr_bytes()) / 1e6},
          {"bursts", p.bursts()},
          {"search_ms", p.search_ms()},
          {"wall_ms", r.wall_ms},
          {"from_cache", r.from_cache}};
}

// Figures of `other` against `base`, for one layer or for the totals.
json versus(uint64_t ddr, uint64_t other_ddr, double us, double other_us, double uj, double other_uj) {
  return {{"ddr_bytes", ddr},
          {"other_ddr_bytes", other_ddr},
          {"ddr_ratio", ratio(static_cast<double>(other_ddr), static_cast<double>(ddr))},
          {"us", us},
          {"other_us", other_us},
          {"time_ratio", ratio(other_us, us)},
          {"slower_percent", 100 * (ratio(other_us, us) - 1)},
          {"energy_uj", uj},
          {"other_energy_uj", other_uj}};
}

json comparison_json(const PlanReport& r) {
  json layers = json::array();
  for (size_t i = 0; i < r.plan.layers.size() && i < r.other.layers.size(); ++i) {
    const plan::LayerPlan &l = r.plan.layers[i], &o = r.other.layers[i];
    json j = versus(l.cost.ddr_bytes, o.cost.ddr_bytes, layer_us(l, r.board), layer_us(o, r.board), l.cost.energy_uj,
                    o.cost.energy_uj);
    j["index"] = i;
    j["name"] = l.name;
    j["tile"] = tile_json(l.candidate.tile);
    j["other_tile"] = tile_json(o.candidate.tile);
    layers.push_back(std::move(j));
  }
  return {{"kind", compare_kind_name(r.compare)},
          {"other", r.compare == CompareKind::kNaive ? "naive tiles (seeds/000)"
                                                     : "volume-model tiles timed with bursts (TSO-noburst)"},
          {"layers", std::move(layers)},
          {"totals", versus(r.plan.ddr_bytes(), r.other.ddr_bytes(), plan_us(r.plan, r.board),
                            plan_us(r.other, r.board), r.plan.energy_uj(), r.other.energy_uj())}};
}

json placement_json(const plan::Placement& p, const PlanReport& r) {
  json host = json::array();
  const double total = p.total_us(), measured = p.total_measured_us();
  for (const plan::HostOpTime& op : p.host_ops) {
    json o = {{"node", op.node}, {"op", op.op}, {"macs", op.macs}};
    if (p.host_modeled) {
      o["us"] = op.us;
      o["time_share"] = total > 0 ? op.us / total : 0.0;
    }
    if (p.host_measured) {
      o["measured_us"] = op.measured_us;
      o["measured_time_share"] = measured > 0 ? op.measured_us / measured : 0.0;
    }
    host.push_back(std::move(o));
  }
  json doc = {
      {"fabric_macs", p.fabric_macs},         {"host_macs", p.host_macs}, {"fabric_mac_share", p.fabric_mac_share()},
      {"fabric_segments", p.fabric_segments}, {"handovers", p.handovers}, {"fabric_us", p.fabric_us},
      {"host_ops", std::move(host)}};
  if (p.host_modeled) doc["host_us"] = p.host_us();
  if (p.host_measured) doc["host_measured_us"] = p.host_measured_us();
  json handovers = json::array();
  for (const plan::HandoverPlan& h : r.plan.handovers) {
    handovers.push_back({{"from", h.from},
                         {"to", h.to},
                         {"bytes_out", h.bytes_out},
                         {"bytes_in", h.bytes_in},
                         {"ddr_bytes", h.cost.ddr_bytes},
                         {"us", r.board.fabric_clock_mhz > 0 ? h.cost.total_cycles / r.board.fabric_clock_mhz : 0.0},
                         {"energy_uj", h.cost.energy_uj}});
  }
  doc["handover_costs"] = std::move(handovers);
  return doc;
}

}  // namespace

nlohmann::json plan_json(const PlanReport& r) {
  const plan::BoardProfile& b = r.board;
  const plan::PlanOptions& o = r.plan.options;
  const uint32_t cus = plan::effective_board(b, o.space).compute_units;
  json layers = json::array();
  for (size_t i = 0; i < r.plan.layers.size(); ++i) layers.push_back(layer_json(i, r.plan.layers[i], r));
  json doc = {{"model", r.model},
              {"source", r.source},
              {"fabric", r.fabric_summary},
              {"placement", placement_json(r.placement, r)},
              {"board",
               {{"name", b.name},
                {"clock_mhz", b.fabric_clock_mhz},
                {"compute_units", cus},
                {"mac_lanes", b.mac_lanes},
                {"mac_channels", b.mac_channels},
                {"ddr_gbps", plan::effective_board(b, o.space).ddr_gbps},
                {"burst_bytes", b.burst_bytes},
                {"tile_budget_bytes", b.tile_budget_bytes()},
                {"kernel_instances", b.kernel_instances},
                {"peak_gops",
                 2.0 * static_cast<double>(b.macs_per_cycle()) * cus * r.plan.instances() * b.fabric_clock_mhz / 1e3}}},
              {"options",
               {{"space", plan::search_space_name(o.space)},
                {"objective", plan::objective_name(o.objective)},
                {"dram", plan::dram_model_name(o.dram)},
                {"naive", o.naive}}},
              {"from_cache", r.from_cache},
              {"layers", std::move(layers)},
              {"totals", totals_json(r)},
              {"caveat", "modeled from the board profile, not measured"}};
  if (r.compare != CompareKind::kNone) doc["comparison"] = comparison_json(r);
  return doc;
}

}  // namespace tessera::client
