// The IR: a graph of typed operators over named float tensors. Importers (ONNX, Caffe) produce
// it; passes rewrite it; the host reference executor and (later) the planner consume it.
#pragma once

#include <array>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "accel/common/status.h"
#include "accel/graph/tensor.h"

namespace tessera {

enum class OpKind {
  kConv,
  kRelu,
  kClip,
  kMaxPool,
  kAveragePool,
  kGlobalAveragePool,
  kGemm,
  kMatMul,
  kAdd,
  kMul,
  kConcat,
  kFlatten,
  kReshape,
  kBatchNorm,
  kLrn,
  kSoftmax,
  kIdentity,
  // Elementwise (numpy broadcasting for the binary ones).
  kSub,
  kDiv,
  kPow,
  kSigmoid,
  kHardSigmoid,
  kHardSwish,
  kSqrt,
  kErf,
  kGelu,  // x * 0.5 * (1 + erf(x / sqrt(2))): the importer's fusion of the exporter's Erf chain
  // Layout and selection.
  kTranspose,
  kSlice,
  kGather,
  kPad,
  kReduceMean,
  kLayerNorm,  // ONNX LayerNormalization (opset 17), or the importer's fusion of its opset-13 chain
};

const char* op_kind_name(OpKind op);

// 2-D spatial attributes: {height, width}; pads are {top, left, bottom, right}.
struct ConvAttrs {
  std::array<int, 2> kernel{1, 1};
  std::array<int, 2> stride{1, 1};
  std::array<int, 2> dilation{1, 1};
  std::array<int, 4> pads{0, 0, 0, 0};
  int group = 1;
};

struct PoolAttrs {
  std::array<int, 2> kernel{1, 1};
  std::array<int, 2> stride{1, 1};
  std::array<int, 4> pads{0, 0, 0, 0};
  bool ceil_mode = false;
  bool count_include_pad = false;  // AveragePool only
};

// y = alpha * A' * B' + beta * C, A' = transA ? A^T : A, B' likewise.
struct GemmAttrs {
  float alpha = 1.0f;
  float beta = 1.0f;
  bool trans_a = false;
  bool trans_b = false;
};

struct ClipAttrs {
  float min = -3.402823466e38f;
  float max = 3.402823466e38f;
};

// Across-channel LRN as ONNX defines it: x / (bias + alpha/size * sum(x^2))^beta, the sum over
// `size` neighbouring channels. within_channel (Caffe's WITHIN_CHANNEL norm region): the sum runs
// over a size x size spatial window of the same channel (zero outside the map) and alpha is
// divided by size^2.
struct LrnAttrs {
  int size = 5;
  float alpha = 1e-4f;
  float beta = 0.75f;
  float bias = 1.0f;
  bool within_channel = false;
};

struct BatchNormAttrs {
  float epsilon = 1e-5f;
};

// Concat, Softmax, Flatten: one axis (already made non-negative by the importer when the
// input rank is known; may be negative otherwise).
struct AxisAttrs {
  int axis = 1;
  // Concat only: operands whose dim 0 is 1 repeat along dim 0 to the others' (a batch-of-one
  // export's constants, such as ViT's class token, folded at batch 1; the importer sets it).
  bool broadcast_batch = false;
};

// Target shape with ONNX semantics: 0 copies the input dim (unless allow_zero), -1 is inferred.
struct ReshapeAttrs {
  Shape shape;
  bool allow_zero = false;
};

// HardSigmoid: max(0, min(1, alpha * x + beta)).
struct HardSigmoidAttrs {
  float alpha = 0.2f;
  float beta = 0.5f;
};

// Transpose: output dim i is input dim perm[i].
struct TransposeAttrs {
  std::vector<int> perm;
};

// Slice with ONNX semantics on constant bounds: for each listed axis, start/end clamped to the
// dim (negative counts from the end), step != 0.
struct SliceAttrs {
  std::vector<int64_t> starts, ends, axes, steps;
};

// Gather along `axis` with constant indices (negative counts from the end of the dim); the
// output is x's shape with dim `axis` replaced by the indices' shape (a scalar index drops it).
struct GatherAttrs {
  int axis = 0;
  std::vector<int64_t> indices;
  Shape indices_shape;
};

// Constant padding: pads[i] before and pads[rank + i] after dim i (ONNX order), >= 0.
struct PadAttrs {
  std::vector<int64_t> pads;
  float value = 0.0f;
};

// ReduceMean over `axes` (empty: all dims; negative counts from the end).
struct ReduceAttrs {
  std::vector<int> axes;
  bool keep_dims = true;
};

// LayerNormalization: normalised over dims [axis, rank), then * scale + bias (operands 1, 2).
struct LayerNormAttrs {
  int axis = -1;
  float epsilon = 1e-5f;
};

using NodeAttrs = std::variant<std::monostate, ConvAttrs, PoolAttrs, GemmAttrs, ClipAttrs, LrnAttrs, BatchNormAttrs,
                               AxisAttrs, ReshapeAttrs, HardSigmoidAttrs, TransposeAttrs, SliceAttrs, GatherAttrs,
                               PadAttrs, ReduceAttrs, LayerNormAttrs>;

// One operator. `inputs` name activations or constants (weights); an empty name is an omitted
// optional input. Operand order follows ONNX (Conv: X, W[, B]; BatchNorm: X, scale, B, mean, var;
// Gemm: A, B[, C]).
struct Node {
  std::string name;
  OpKind op = OpKind::kIdentity;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  NodeAttrs attrs;
};

// A graph input or output: name and shape (dim 0 is the batch; -1 where it is dynamic).
struct ValueInfo {
  std::string name;
  Shape shape;
};

struct Graph {
  std::string name;
  std::vector<ValueInfo> inputs;  // activations fed by the caller (constants excluded)
  std::vector<ValueInfo> outputs;
  std::vector<Node> nodes;                  // topologically ordered
  std::map<std::string, Tensor> constants;  // weights, biases, folded constants

  const Tensor* constant(const std::string& name) const;
};

// Shapes of every activation for a given batch size; INVALID_ARGUMENT naming the node
// when the graph is inconsistent (unknown input, wrong operand shapes).
Result<std::map<std::string, Shape>> infer_shapes(const Graph& graph, int64_t batch);

// Checks structure: every node input is produced earlier, is a constant or a graph input;
// names are unique; outputs are produced. The error names the offending node.
Status validate_graph(const Graph& graph);

}  // namespace tessera
