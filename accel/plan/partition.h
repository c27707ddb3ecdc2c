// The split: which nodes of a float graph run on the fabric as int8 layers of
// kernels/kernel_abi.h and which stay on the host. Conv (+ fused ReLU/ReLU6 and max-pool),
// standalone pooling, element-wise Add and channel Concat go to the fabric — the NEURAghe split
// (seeds/003): convolutions on the accelerator, FC, softmax, LRN and anything the kernel cannot
// do on the ARM host — wherever they stand in the graph. The graph becomes a sequence of
// segments in graph order, fabric and host in any alternation; each fabric segment is one
// program (one int8 input tensor, one int8 output tensor in its arena), each host segment a
// float subgraph that reads any tensor an earlier segment made.
#pragma once

#include <limits>
#include <map>
#include <set>
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

// A run of the graph on one side. Fabric: layers (in order) reading one tensor from outside
// (`input`: the graph input or an earlier segment's tensor) and handing one on (`output`, read
// by later segments or the caller under the names in `output_names`: the output and its aliases).
// Host: graph nodes in order.
struct Segment {
  bool fabric = false;
  std::vector<FabricLayer> layers;  // fabric
  std::string input, output;        // fabric
  std::vector<std::string> output_names;
  std::vector<size_t> host_nodes;  // host
};

struct Partition {
  std::vector<Segment> segments;  // in graph order; never two host segments in a row
  // Tensors that are another tensor under a new name (Identity, Dropout), over all fabric segments.
  std::map<std::string, std::string> aliases;
  // Concat inputs: tensor -> (concat output, first channel) — producers write into the slice.
  struct Slice {
    std::string concat;
    int64_t channel_base = 0;
  };
  std::map<std::string, Slice> slices;
  std::vector<std::string> concats;  // concat outputs (whole buffers)
  std::string graph_input;
  // Why nodes the fabric has a layer kind for stayed on the host, one line each.
  std::vector<std::string> host_reasons;

  size_t fabric_segments() const;
  size_t fabric_layers() const;
  // Round trips through the host between two fabric segments (fabric segments - 1, or 0).
  size_t handovers() const;
};

// Test and tuning hooks: node names whose layer goes to the host although the fabric could run
// it, and node names before which a new fabric segment starts (a fabric -> fabric hand-over).
struct PartitionOptions {
  std::set<std::string> host_only;
  std::set<std::string> split_before;
};

// Splits `graph` (BatchNorm already folded) for batch-1 `shapes`. A graph without a fabric layer
// gives one host segment with the reason in host_reasons.
Result<Partition> partition_graph(const Graph& graph, const std::map<std::string, Shape>& shapes,
                                  const PartitionOptions& options = {});

}  // namespace tessera::plan
