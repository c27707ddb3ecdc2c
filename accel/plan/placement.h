// Where a model runs, as `tessera plan` and the daemon's load line tell it: the share of its
// multiply-adds on the fabric, the hand-overs between fabric segments, and each host op with its
// share of the modeled time per image. Fabric time is the plan's (layers and hand-overs); a host
// op's is the larger of its FLOPs at the board's host_gflops and its float bytes (inputs and
// output) at host_gbps (board_profile.h), or unknown where the profile leaves them out.
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
  std::string node;   // the graph node's name
  std::string op;     // its kind, e.g. "LRN"
  uint64_t macs = 0;  // per image
  double us = 0;      // modeled per image (0 when the board has no host figures)
};

struct Placement {
  uint64_t fabric_macs = 0, host_macs = 0;  // per image: Conv, Gemm and MatMul multiply-adds
  size_t fabric_segments = 0;
  size_t handovers = 0;
  double fabric_us = 0;  // the plan's per-image fabric time, hand-overs included
  bool host_modeled = false;
  std::vector<HostOpTime> host_ops;  // in graph order

  double host_us() const;
  double total_us() const { return fabric_us + host_us(); }
  // Fabric MACs over all MACs (1 when the model has none).
  double fabric_mac_share() const;
  // "fabric 98.6% of MACs, 2 segments, 1 hand-over; host: LRN lrn 3.1%, Gemm fc 0.2% of modeled time"
  std::string line() const;
};

// Host ops' modeled time per image on `board` (batch-1 `shapes`).
HostOpTime host_op_time(const Graph& graph, const Node& node, const std::map<std::string, Shape>& shapes,
                        const BoardProfile& board);

}  // namespace tessera::plan
