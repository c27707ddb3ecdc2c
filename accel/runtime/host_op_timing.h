// The host ops of a placement, measured on this machine (plan/placement.h keeps the figures): the
// daemon measures them when it loads a model (engine_int8.cc), `tessera plan` where it runs
// (plan_model.cc). They run in float on the thread that submitted the batch, as in serving.
#pragma once

#include "accel/common/status.h"
#include "accel/graph/graph.h"
#include "accel/plan/placement.h"

namespace tessera {

// Runs `graph` (the one compile_model placed) in float on the first image of `sample` (a batch of
// the graph's input) once to warm up and twice timed, and sets each host op's measured time to the
// lower of its two. Costs three float inferences; nothing when no op runs on the host.
Status measure_host_ops(const Graph& graph, const Tensor& sample, plan::Placement& placement);

}  // namespace tessera
