// What `tessera plan` reports for one model on one board, and the per-layer figures the table,
// the JSON and the roofline share (so the three never disagree). All figures are per image and
// modeled from the board profile (accel/plan/model_plan.h), never measured.
#pragma once

#include <optional>
#include <string>

#include "accel/plan/model_plan.h"
#include "accel/plan/placement.h"

namespace tessera::client {

// A second plan of the same layers to set against the main one.
enum class CompareKind { kNone, kNaive, kNoBurst };

const char* compare_kind_name(CompareKind kind);

struct PlanReport {
  std::string model;           // the model's name (model.toml's, the file's stem, or <name>/model.onnx's folder)
  std::string source;          // the path as given on the command line
  std::string fabric_summary;  // what runs on the fabric and what on the host
  plan::Placement placement;   // MAC share on the fabric, hand-overs, host ops' share of modeled time
  plan::BoardProfile board;    // the profile as loaded (the plan's may be empty without fabric layers)
  plan::ModelPlan plan;        // burst-aware plan with the requested options
  bool from_cache = false;     // the plan's choices came from the plan cache
  std::string cache_dir;       // "" when the cache is off or memory-only
  double wall_ms = 0;          // import + compile + search, as this run saw it
  // kNaive: the naive-tiling plan (seeds/000); kNoBurst: the plan chosen with the volume-only
  // DRAM model, rescored with the burst-aware one (TSO, seeds/002). Same layers as `plan`.
  CompareKind compare = CompareKind::kNone;
  plan::ModelPlan other;
};

// "conv", "conv+pool", "dwconv", "gconv", "maxpool", "avgpool", "add".
std::string layer_op_name(const abi::LayerDesc& d);

// "64x56x56 -> 128x28x28 k3 s2 g32 +pool3s2" (kernel/stride for conv, window/stride for pool).
std::string layer_shape(const abi::LayerDesc& d);

// "16/64/8/28": the tile's m/n/r/c; "16/3/8/28 fold" when the kernel window is folded into the
// MAC vector (LayerDesc.fold_rows).
std::string tile_text(const plan::TileShape& t);

// Modeled time of one layer in microseconds.
double layer_us(const plan::LayerPlan& l, const plan::BoardProfile& board);

// MAC rate of a conv layer as a fraction of the array's peak (all compute units of the plan's
// space); nothing for pool/add layers, whose cost.macs count window operations.
std::optional<double> mac_utilization(const plan::LayerPlan& l, const plan::ModelPlan& plan);

// Roofline coordinates of a conv layer: ops/byte (2 x MACs / DDR bytes) and GOP/s (2 x MACs /
// layer time); nothing for pool/add layers or a layer without traffic or time.
struct RooflinePoint {
  double intensity = 0;
  double gops = 0;
};
std::optional<RooflinePoint> roofline_point(const plan::LayerPlan& l, const plan::BoardProfile& board);

// Totals over the plan's layers (plan_us: and its hand-overs).
double plan_us(const plan::ModelPlan& plan, const plan::BoardProfile& board);

// a / b, or 0 where b is not positive (a figure the other board or model does not have).
inline double ratio(double a, double b) { return b > 0 ? a / b : 0; }
size_t searched_layers(const plan::ModelPlan& plan);

}  // namespace tessera::client
