#include "client/plan/plan_report.h"

namespace tessera::client {
namespace {

// "3" for a square window, "1x7" otherwise.
std::string pair_text(uint32_t h, uint32_t w) {
  return h == w ? std::to_string(h) : std::to_string(h) + "x" + std::to_string(w);
}

std::string chw(uint32_t c, uint32_t h, uint32_t w) {
  return std::to_string(c) + "x" + std::to_string(h) + "x" + std::to_string(w);
}

}  // namespace

const char* compare_kind_name(CompareKind kind) {
  switch (kind) {
    case CompareKind::kNone: return "none";
    case CompareKind::kNaive: return "naive";
    case CompareKind::kNoBurst: return "noburst";
  }
  return "?";
}

std::string layer_op_name(const abi::LayerDesc& d) {
  switch (d.op) {
    case abi::kOpConv: {
      std::string name = d.groups > 1 && d.groups == d.in_c ? "dwconv" : d.groups > 1 ? "gconv" : "conv";
      return d.pool_kind == abi::kPoolMax ? name + "+pool" : name;
    }
    case abi::kOpPool: return d.pool_kind == abi::kPoolAverage ? "avgpool" : "maxpool";
    case abi::kOpAdd: return "add";
    default: return "op" + std::to_string(d.op);
  }
}

std::string layer_shape(const abi::LayerDesc& d) {
  std::string s = chw(d.in_c, d.in_h, d.in_w) + " -> " + chw(d.out_c, d.out_h, d.out_w);
  if (d.op == abi::kOpConv) {
    s += " k" + pair_text(d.kernel_h, d.kernel_w) + " s" + pair_text(d.stride_h, d.stride_w);
    if (d.groups > 1) s += " g" + std::to_string(d.groups);
    if (d.pool_kind == abi::kPoolMax) {
      s += " +pool" + pair_text(d.pool_h, d.pool_w) + "s" + pair_text(d.pool_stride_h, d.pool_stride_w);
    }
  } else if (d.op == abi::kOpPool) {
    s += " k" + pair_text(d.pool_h, d.pool_w) + " s" + pair_text(d.pool_stride_h, d.pool_stride_w);
  }
  return s;
}

std::string tile_text(const plan::TileShape& t) {
  return std::to_string(t.m) + "/" + std::to_string(t.n) + "/" + std::to_string(t.r) + "/" + std::to_string(t.c) +
         (t.fold_rows ? " fold" : "");
}

double layer_us(const plan::LayerPlan& l, const plan::BoardProfile& board) {
  return board.fabric_clock_mhz > 0 ? l.cost.total_cycles / board.fabric_clock_mhz : 0;
}

std::optional<double> mac_utilization(const plan::LayerPlan& l, const plan::ModelPlan& plan) {
  if (!l.searched || l.cost.total_cycles <= 0) return std::nullopt;
  const double peak_per_cycle = static_cast<double>(plan.board.macs_per_cycle()) * plan.compute_units();
  if (peak_per_cycle <= 0) return std::nullopt;
  return static_cast<double>(l.cost.macs) / (l.cost.total_cycles * peak_per_cycle);
}

std::optional<RooflinePoint> roofline_point(const plan::LayerPlan& l, const plan::BoardProfile& board) {
  const double us = layer_us(l, board);
  if (!l.searched || l.cost.ddr_bytes == 0 || l.cost.macs == 0 || us <= 0) return std::nullopt;
  const double ops = 2.0 * static_cast<double>(l.cost.macs);
  return RooflinePoint{ops / static_cast<double>(l.cost.ddr_bytes), ops / (us * 1e-6) / 1e9};
}

double plan_us(const plan::ModelPlan& plan, const plan::BoardProfile& board) {
  double us = 0;
  for (const plan::LayerPlan& l : plan.layers) us += layer_us(l, board);
  return us + (board.fabric_clock_mhz > 0 ? plan.handover_cycles() / board.fabric_clock_mhz : 0);
}

size_t searched_layers(const plan::ModelPlan& plan) {
  size_t n = 0;
  for (const plan::LayerPlan& l : plan.layers) n += l.searched ? 1 : 0;
  return n;
}

}  // namespace tessera::client
