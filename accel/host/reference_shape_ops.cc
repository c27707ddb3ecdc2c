// Reference Concat, Flatten and Reshape: data movement only.
#include <algorithm>

#include "accel/graph/op_shapes.h"
#include "accel/host/reference_ops.h"

namespace tessera::host {

Result<Tensor> concat(const std::vector<const Tensor*>& inputs, int axis, bool broadcast_batch) {
  std::vector<Shape> shapes;
  for (const Tensor* t : inputs) {
    if (t == nullptr) return Status::invalid_argument("an input is missing");
    shapes.push_back(t->shape);
  }
  TESSERA_ASSIGN_OR_RETURN(Shape out_shape, concat_output_shape(shapes, axis, broadcast_batch));
  TESSERA_ASSIGN_OR_RETURN(const int ax, normalize_axis(axis, static_cast<int>(out_shape.size())));
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < ax; ++d) outer *= out_shape[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(ax) + 1; d < out_shape.size(); ++d) inner *= out_shape[d];
  Tensor y(out_shape);
  const int64_t out_chunk = out_shape[static_cast<size_t>(ax)] * inner;
  int64_t offset = 0;  // where this input's chunk starts inside an output chunk
  for (const Tensor* t : inputs) {
    const int64_t chunk = t->dim(ax) * inner;
    // An input repeated along dim 0 has outer / dim 0 chunks: the same ones for every image.
    const int64_t own_outer = ax > 0 && t->dim(0) != out_shape[0] ? outer / out_shape[0] : outer;
    for (int64_t o = 0; o < outer; ++o) {
      std::copy_n(t->ptr() + (o % own_outer) * chunk, chunk, y.ptr() + o * out_chunk + offset);
    }
    offset += chunk;
  }
  return y;
}

Result<Tensor> flatten(Tensor x, int axis) {
  TESSERA_ASSIGN_OR_RETURN(Shape out_shape, flatten_output_shape(x.shape, axis));
  x.shape = std::move(out_shape);
  return x;
}

Result<Tensor> reshape(Tensor x, const ReshapeAttrs& attrs) {
  TESSERA_ASSIGN_OR_RETURN(Shape out_shape, reshape_output_shape(x.shape, attrs));
  x.shape = std::move(out_shape);
  return x;
}

}  // namespace tessera::host
