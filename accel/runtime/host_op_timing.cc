#include "accel/runtime/host_op_timing.h"

#include <algorithm>
#include <map>
#include <string>

#include "accel/host/reference_executor.h"

namespace tessera {

Status measure_host_ops(const Graph& graph, const Tensor& sample, plan::Placement& placement) {
  if (placement.host_ops.empty()) return Status::ok();
  if (graph.inputs.size() != 1) return Status::invalid_argument("measuring host ops needs a graph of one input");
  if (sample.rank() < 1 || sample.dim(0) < 1) {
    return Status::invalid_argument("measuring host ops needs an image, got " + shape_to_string(sample.shape));
  }
  Shape one = sample.shape;
  one[0] = 1;
  Tensor image(one);
  std::copy_n(sample.data.begin(), image.data.size(), image.data.begin());
  const std::map<std::string, Tensor> inputs{{graph.inputs[0].name, std::move(image)}};
  constexpr int kTimedRuns = 2;
  host::NodeSeconds fastest;
  for (int run = 0; run <= kTimedRuns; ++run) {
    host::NodeSeconds seconds;
    TESSERA_RETURN_IF_ERROR(host::run_reference(graph, inputs, nullptr, &seconds).status());
    if (run == 0) continue;  // the warm-up: first touches of the weights and the allocator
    if (fastest.empty()) {
      fastest = std::move(seconds);
    } else {
      for (size_t i = 0; i < fastest.size(); ++i) fastest[i] = std::min(fastest[i], seconds[i]);
    }
  }
  for (plan::HostOpTime& op : placement.host_ops) {
    if (op.index >= fastest.size()) return Status::internal("host op " + op.node + " is not a node of the graph");
    op.measured_us = fastest[op.index] * 1e6;
  }
  placement.host_measured = true;
  return Status::ok();
}

}  // namespace tessera
