#include "accel/plan/placement.h"

#include <algorithm>
#include <cstdio>

#include "accel/plan/node_macs.h"

namespace tessera::plan {

double Placement::host_us() const {
  double us = 0;
  for (const HostOpTime& op : host_ops) us += op.us;
  return us;
}

double Placement::host_measured_us() const {
  double us = 0;
  for (const HostOpTime& op : host_ops) us += std::max(op.measured_us, 0.0);
  return us;
}

double Placement::fabric_mac_share() const {
  const uint64_t all = fabric_macs + host_macs;
  return all == 0 ? 1.0 : static_cast<double>(fabric_macs) / static_cast<double>(all);
}

std::string Placement::line() const {
  char head[160];
  std::snprintf(head, sizeof head, "fabric %.1f%% of MACs, %zu segment%s, %zu hand-over%s", 100 * fabric_mac_share(),
                fabric_segments, fabric_segments == 1 ? "" : "s", handovers, handovers == 1 ? "" : "s");
  std::string s = head;
  if (host_ops.empty()) return s + "; nothing on the host";
  s += "; host:";
  const double modeled = total_us(), measured = total_measured_us();
  for (size_t i = 0; i < host_ops.size(); ++i) {
    const HostOpTime& op = host_ops[i];
    s += (i == 0 ? " " : ", ") + op.op + " " + op.node;
    char share[64];
    if (host_modeled && modeled > 0) {
      std::snprintf(share, sizeof share, " %.1f%%", 100 * op.us / modeled);
      s += share;
    }
    if (host_measured && measured > 0) {
      std::snprintf(share, sizeof share, "%s%.1f%% (%.*f us)", host_modeled ? " / " : " ",
                    100 * op.measured_us / measured, op.measured_us < 10 ? 1 : 0, op.measured_us);
      s += share;
    }
  }
  if (host_modeled) {
    s += host_measured ? " of modeled / measured time" : " of modeled time";
  } else {
    s += host_measured ? " of measured time (no host figures for this board)" : " (no host figures for this board)";
  }
  return s;
}

HostOpTime host_op_time(const Graph& graph, const Node& node, const std::map<std::string, Shape>& shapes,
                        const BoardProfile& board) {
  HostOpTime t;
  t.node = node.name;
  t.op = op_kind_name(node.op);
  t.macs = node_macs(graph, node, shapes);
  uint64_t elements = 0;
  for (const auto& in : node.inputs) {
    if (in.empty()) continue;
    if (const Tensor* c = graph.constant(in)) {
      elements += c->data.size();
    } else if (auto s = shapes.find(in); s != shapes.end()) {
      elements += static_cast<uint64_t>(shape_elements(s->second));
    }
  }
  for (const auto& out : node.outputs) {
    if (auto s = shapes.find(out); s != shapes.end()) elements += static_cast<uint64_t>(shape_elements(s->second));
  }
  if (board.host_gflops > 0 && board.host_gbps > 0) {
    const double flop_us = 2.0 * static_cast<double>(t.macs) / (board.host_gflops * 1e3);
    const double byte_us = 4.0 * static_cast<double>(elements) / (board.host_gbps * 1e3);
    t.us = std::max(flop_us, byte_us);
  }
  return t;
}

}  // namespace tessera::plan
