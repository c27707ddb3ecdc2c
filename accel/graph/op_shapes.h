// Output-shape rules of every operator, in one place: infer_shapes and the host reference
// kernels both use them. Each returns INVALID_ARGUMENT saying what does not fit; callers that
// know the node prefix its label ("node 'conv1' (Conv): ...").
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "accel/common/status.h"
#include "accel/graph/graph.h"
#include "accel/graph/tensor.h"

namespace tessera {

// `axis` made non-negative for a tensor of `rank` dims. Valid: [-rank, rank), or [-rank, rank]
// when `allow_rank` (Flatten's axis may equal the rank).
Result<int> normalize_axis(int axis, int rank, bool allow_rank = false);

// Conv over NCHW `x` with OIHW weights `w` = [M, C/group, kH, kW]; `bias`, when given, is [M].
Result<Shape> conv_output_shape(const Shape& x, const Shape& w, const Shape* bias, const ConvAttrs& attrs);

// One pooled dimension: floor (or ceil) of (in + pads - kernel) / stride, plus one; in ceil mode
// the last window must start inside the input or its leading pad (PyTorch's rule).
Result<int64_t> pool_output_dim(int64_t in, int kernel, int stride, int pad_begin, int pad_end, bool ceil_mode);

// MaxPool / AveragePool over NCHW. Pads must be smaller than the kernel, so that every window
// covers at least one input element.
Result<Shape> pool_output_shape(const Shape& x, const PoolAttrs& attrs);

// GlobalAveragePool: [N, C, D1, ...] -> [N, C, 1, ...].
Result<Shape> global_pool_output_shape(const Shape& x);

// Gemm: A [M,K] (or [K,M] with trans_a), B [K,N] (or [N,K]); C, when given, must broadcast
// unidirectionally to [M, N].
Result<Shape> gemm_output_shape(const Shape& a, const Shape& b, const Shape* c, const GemmAttrs& attrs);

// MatMul with numpy semantics: 1-D operands are promoted and the added dim removed; leading
// (batch) dims broadcast.
Result<Shape> matmul_output_shape(const Shape& a, const Shape& b);

// Numpy multidirectional broadcasting (Add, Mul).
Result<Shape> broadcast_shape(const Shape& a, const Shape& b);

// Concat; with broadcast_batch (axis != 0), an input whose dim 0 is 1 counts as the largest dim 0.
Result<Shape> concat_output_shape(const std::vector<Shape>& inputs, int axis, bool broadcast_batch = false);

// Flatten: [prod(dims before axis), prod(dims from axis)].
Result<Shape> flatten_output_shape(const Shape& x, int axis);

// Reshape with ONNX semantics: 0 copies the input dim (unless allow_zero), one -1 is inferred.
Result<Shape> reshape_output_shape(const Shape& x, const ReshapeAttrs& attrs);

// BatchNormalization (inference): x is [N, C, ...]; scale, bias, mean and var are [C].
Result<Shape> batch_norm_output_shape(const Shape& x, const Shape& scale, const Shape& bias, const Shape& mean,
                                      const Shape& var);

// LRN: x is [N, C, ...]; size >= 1.
Result<Shape> lrn_output_shape(const Shape& x, const LrnAttrs& attrs);

// Softmax along one axis of x (rank >= 1).
Result<Shape> softmax_output_shape(const Shape& x, int axis);

// ---- Layout, selection and normalisation (tensor_op_shapes.cc) ----

// Transpose: perm must be a permutation of [0, rank).
Result<Shape> transpose_output_shape(const Shape& x, const std::vector<int>& perm);

// Slice resolved on a shape: per dim of x, the first index, the step and the count taken.
struct SliceWindow {
  std::vector<int64_t> start, step, count;
};
Result<SliceWindow> slice_window(const Shape& x, const SliceAttrs& attrs);
Result<Shape> slice_output_shape(const Shape& x, const SliceAttrs& attrs);

// Gather with constant indices, each inside [-dim, dim).
Result<Shape> gather_output_shape(const Shape& x, const GatherAttrs& attrs);

// Constant Pad: 2 * rank non-negative pads.
Result<Shape> pad_output_shape(const Shape& x, const PadAttrs& attrs);

// ReduceMean: the reduced dims kept as 1 (keep_dims) or dropped; axes in range, no repeats.
Result<Shape> reduce_output_shape(const Shape& x, const ReduceAttrs& attrs);
// The reduced axes made non-negative and sorted (all dims when attrs.axes is empty).
Result<std::vector<int>> reduce_axes(const Shape& x, const ReduceAttrs& attrs);

// LayerNormalization: scale (and bias, when given) must have x's trailing dims from axis on.
Result<Shape> layer_norm_output_shape(const Shape& x, const Shape& scale, const Shape* bias,
                                      const LayerNormAttrs& attrs);

// ---- Node-level rules (shared by validate_graph, infer_shapes and the reference executor) ----

// How a node is called in errors: "node 'conv1' (Conv)", or "node #3 (Conv)" when unnamed.
std::string node_label(const Node& node, size_t index);

// Operand count of an op: `min` required (non-empty) operands, at most `max` (-1: unbounded).
struct OperandCount {
  int min = 1;
  int max = 1;
};
OperandCount op_operand_count(OpKind op);

// Checks operand count, required operands named and the attrs alternative fits the op.
Status check_node_signature(const Node& node);

// The node's attrs of type A, or A's defaults when the node carries none (std::monostate).
template <class A>
A node_attrs(const Node& node) {
  if (const A* a = std::get_if<A>(&node.attrs)) return *a;
  return A{};
}

// The axis a Concat/Softmax/Flatten node uses (Softmax without attrs: -1, ONNX opset 13).
int node_axis(const Node& node);

// Output shape of `node` given its operand shapes (nullptr for an omitted optional operand).
// The error does not name the node; callers prefix node_label.
Result<Shape> node_output_shape(const Node& node, const std::vector<const Shape*>& operands);

// Shapes of every activation (graph inputs and node outputs) given the graph inputs' actual
// shapes. INVALID_ARGUMENT naming the node when the graph is inconsistent.
Result<std::map<std::string, Shape>> infer_shapes_from(const Graph& graph,
                                                       const std::map<std::string, Shape>& input_shapes);

}  // namespace tessera
