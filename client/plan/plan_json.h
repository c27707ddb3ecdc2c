// `tessera plan --json`: one document per board. Figures are per image, modeled from the board
// profile (not measured); bytes are bytes, times microseconds (us), energy microjoules (uj).
//
// {
//   "model": "squeezenet1_1", "source": "<path given>", "fabric": "<what runs where>",
//   "board": {"name", "clock_mhz", "compute_units" (of the search space), "mac_lanes",
//             "mac_channels", "ddr_gbps", "burst_bytes", "tile_budget_bytes", "peak_gops"},
//   "options": {"space": "kernel"|"explore", "objective": "time"|"bytes"|"energy",
//               "dram": "burst", "naive": false},
//   "from_cache": bool,
//   "layers": [{
//     "index", "name", "op" ("conv", "conv+pool", "dwconv", "gconv", "maxpool", "avgpool", "add"),
//     "shape" (text), "in": [c, h, w], "out": [c, h, w],
//     "kernel": [h, w], "stride": [h, w], "groups" (conv only),
//     "searched" (conv: tile search; pool/add: streamed with fixed tiles),
//     "tile": {"m", "n", "r", "c"}, "schedule": "IS"|"OS"|"WS"|null, "partition": "KS"|"OFM"|"KS&OFM"|null,
//     "footprint_bytes", "budget_bytes", "ocm_use" (fraction of the double-buffer budget),
//     "ddr_bytes", "input_bytes", "weight_bytes", "output_bytes", "dma_calls", "dma_runs", "bursts",
//     "macs" (conv: MACs; pool/add: window operations), "mac_cycles", "dram_cycles", "cycles",
//     "us", "bound": "compute"|"memory", "mac_utilization" (fraction of the array's peak, conv
//     only, else null), "energy_uj"
//   }],  (no timings of the search here: a cached plan's layers equal the searched plan's)
//   "totals": {"layers", "searched_layers", "cycles", "us" (sum of the layers' us),
//              "images_per_second" (1e6 / us), "macs" (conv layers only), "gops", "peak_gops",
//              "peak_fraction", "watts", "energy_uj", "mj_per_image", "ddr_bytes", "ddr_mb"
//              (1e6 bytes), "bursts", "search_ms", "wall_ms" (import + compile + search),
//              "from_cache"},
//   "comparison" (with --compare only): {
//     "kind": "naive" | "noburst",
//     "other": "naive tiles (seeds/000)" | "volume-model tiles timed with bursts (TSO-noburst)",
//     "layers": [{"index", "name", "tile", "other_tile", "ddr_bytes", "other_ddr_bytes",
//                 "ddr_ratio" (other / plan), "us", "other_us", "time_ratio" (other / plan),
//                 "slower_percent" (100 x (time_ratio - 1)), "energy_uj", "other_energy_uj"}],
//     "totals": {the same keys without index, name and tiles}
//   },
//   "caveat": "modeled from the board profile, not measured"
// }
//
// `--board all` prints {"model", "plans": [one document per board]}.
#pragma once

#include <nlohmann/json.hpp>

#include "client/plan/plan_report.h"

namespace tessera::client {

nlohmann::json plan_json(const PlanReport& report);

}  // namespace tessera::client
