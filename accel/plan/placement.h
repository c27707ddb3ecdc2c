// Where a model runs, as `tessera plan` and the daemon's load line tell it: the share of its
// multiply-adds on the fabric, the hand-overs between fabric segments, and each host op with its
// share of the modeled and of the measured time per image. Fabric time is the plan's (layers and
// hand-overs) in both. A host op's modeled time is the larger of its FLOPs at the board's
// host_gflops and its float bytes (inputs and output) at host_gbps (board_profile.h), or unknown
// where the profile leaves them out; its measured time is its run in float on the machine that
// loads the model (the daemon's board, or where `tessera plan` runs), batch 1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "accel/graph/graph.h"
#include "accel/plan/board_profile.h"

namespace tessera::plan {

struct HostOpTime {
  std::string node;         // the graph node's name
  std::string op;           // its kind, e.g. "LRN"
  uint64_t macs = 0;        // per image
  double us = 0;            // modeled per image (0 when the board has no host figures)
  size_t index = 0;         // the node's index in the graph compile_model placed
  double measured_us = -1;  // measured per image (runtime/host_op_timing.h), -1 until measured
};

struct Placement {
  uint64_t fabric_macs = 0, host_macs = 0;  // per image: Conv, Gemm and MatMul multiply-adds
  size_t fabric_segments = 0;
  size_t handovers = 0;
  double fabric_us = 0;  // the plan's per-image fabric time, hand-overs included
  bool host_modeled = false;
  bool host_measured = false;        // runtime/host_op_timing.h measured them
  std::vector<HostOpTime> host_ops;  // in graph order

  double host_us() const;
  double total_us() const { return fabric_us + host_us(); }
  double host_measured_us() const;
  // The fabric's modeled time with the host ops' measured time.
  double total_measured_us() const { return fabric_us + host_measured_us(); }
  // Fabric MACs over all MACs (1 when the model has none).
  double fabric_mac_share() const;
  // "fabric 98.6% of MACs, 2 segments, 1 hand-over; host: LRN lrn 3.1%, Gemm fc 0.2% of modeled time",
  // with measured times "host: LRN lrn 3.1% / 9.8% (412 us), Gemm fc 0.2% / 0.5% (21 us) of modeled /
  // measured time".
  std::string line() const;
};

// Host ops' modeled time per image on `board` (batch-1 `shapes`).
HostOpTime host_op_time(const Graph& graph, const Node& node, const std::map<std::string, Shape>& shapes,
                        const BoardProfile& board);

}  // namespace tessera::plan
