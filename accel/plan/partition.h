// The split (first version of accel/plan): which nodes of a float graph run on the fabric as
// int8 layers of kernels/kernel_abi.h and which stay on the host. Conv (+ fused ReLU/ReLU6 and
// max-pool), standalone pooling, element-wise Add and channel Concat go to the fabric — the
// NEURAghe split (seeds/003): convolutions on the accelerator, FC, softmax, LRN and anything
// the kernel cannot do on the ARM host. The fabric part is a prefix of the graph: from the
// first node the fabric cannot run, everything runs on the host.
#pragma once

#include <limits>
#include <map>
#include <string>
#include <vector>

#include "accel/common/status.h"
#include "accel/graph/graph.h"

namespace tessera::plan {

enum class FabricOp { kConv, kMaxPool, kAveragePool, kAdd };

// One fabric layer: a conv with what is fused into it, a standalone pool, or an add.
struct FabricLayer {
  FabricOp op = FabricOp::kConv;
  std::string name;                                         // the first fused node's name
  std::vector<size_t> nodes;                                // graph nodes it covers
  std::string input, input2;                                // tensor names (input2: Add only)
  std::string output;                                       // the tensor it produces, after fusion
  const Node* conv = nullptr;                               // kConv: the conv node
  bool relu = false;                                        // fused ReLU (or Clip with min 0)
  float clip_max = std::numeric_limits<float>::infinity();  // fused Clip upper bound (ReLU6)
  bool fused_pool = false;                                  // kConv: a max-pool follows in the same layer
  PoolAttrs pool;                                           // fused or standalone pool window
};

struct Partition {
  std::vector<FabricLayer> layers;
  // Tensors that are another tensor under a new name (Identity, Dropout).
  std::map<std::string, std::string> aliases;
  // Concat inputs: tensor -> (concat output, first channel) — producers write into the slice.
  struct Slice {
    std::string concat;
    int64_t channel_base = 0;
  };
  std::map<std::string, Slice> slices;
  std::vector<std::string> concats;  // concat outputs (whole buffers)
  std::vector<size_t> host_nodes;    // graph nodes left for the host, in order
  std::string fabric_input;          // the graph input
  std::string fabric_output;         // the one fabric tensor the host (or the caller) reads
  std::string stop_reason;           // why the fabric part ends where it does
};

// Splits `graph` (BatchNorm already folded) for batch-1 `shapes`. A graph with no fabric layer
// gives an empty `layers`; a fabric part with several outputs the host reads is cut back to
// nothing with the reason in stop_reason (a later planner may do better).
Result<Partition> partition_graph(const Graph& graph, const std::map<std::string, Shape>& shapes);

}  // namespace tessera::plan
