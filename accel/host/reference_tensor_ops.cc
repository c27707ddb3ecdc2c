// Reference Transpose, Slice, Gather, Pad, ReduceMean and LayerNormalization: index arithmetic
// over row-major tensors, the innermost dim as a strided loop.
#include <algorithm>
#include <cmath>

#include "accel/graph/op_shapes.h"
#include "accel/host/host_threads.h"
#include "accel/host/reference_ops.h"

namespace tessera::host {
namespace {

std::vector<int64_t> row_major_strides(const Shape& s) {
  std::vector<int64_t> strides(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) strides[d - 1] = strides[d] * s[d];
  return strides;
}

int64_t product(const Shape& s, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= s[i];
  return n;
}

// Writes y's elements in order: y[i...] = x[base + sum(i_d * in_stride_d)], the last dim as the
// inner loop.
void strided_copy(const float* x, int64_t base, const Shape& out_shape, const std::vector<int64_t>& in_stride,
                  float* y) {
  const int64_t total = shape_elements(out_shape);
  if (total == 0) return;
  if (out_shape.empty()) {
    y[0] = x[base];
    return;
  }
  const size_t r = out_shape.size();
  const int64_t inner = out_shape[r - 1], step = in_stride[r - 1];
  std::vector<int64_t> index(r - 1, 0);
  for (int64_t at = 0; at < total; at += inner) {
    int64_t offset = base;
    for (size_t d = 0; d + 1 < r; ++d) offset += index[d] * in_stride[d];
    if (step == 1) {
      std::copy(x + offset, x + offset + inner, y + at);
    } else {
      for (int64_t j = 0; j < inner; ++j) y[at + j] = x[offset + j * step];
    }
    for (size_t d = r - 1; d-- > 0;) {
      if (++index[d] < out_shape[d]) break;
      index[d] = 0;
    }
  }
}

}  // namespace

Result<Tensor> transpose(const Tensor& x, const std::vector<int>& perm) {
  TESSERA_ASSIGN_OR_RETURN(Shape out_shape, transpose_output_shape(x.shape, perm));
  const std::vector<int64_t> strides = row_major_strides(x.shape);
  std::vector<int64_t> in_stride(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) in_stride[i] = strides[static_cast<size_t>(perm[i])];
  Tensor y(out_shape);
  strided_copy(x.ptr(), 0, out_shape, in_stride, y.ptr());
  return y;
}

Result<Tensor> slice(const Tensor& x, const SliceAttrs& attrs) {
  TESSERA_ASSIGN_OR_RETURN(const SliceWindow w, slice_window(x.shape, attrs));
  const std::vector<int64_t> strides = row_major_strides(x.shape);
  int64_t base = 0;
  std::vector<int64_t> in_stride(x.shape.size());
  for (size_t d = 0; d < x.shape.size(); ++d) {
    base += w.start[d] * strides[d];
    in_stride[d] = w.step[d] * strides[d];
  }
  Tensor y(w.count);
  strided_copy(x.ptr(), base, w.count, in_stride, y.ptr());
  return y;
}

Result<Tensor> gather(const Tensor& x, const GatherAttrs& attrs) {
  TESSERA_ASSIGN_OR_RETURN(Shape out_shape, gather_output_shape(x.shape, attrs));
  const auto axis = static_cast<size_t>(attrs.axis < 0 ? attrs.axis + x.rank() : attrs.axis);
  const int64_t outer = product(x.shape, 0, axis), dim = x.shape[axis];
  const int64_t inner = product(x.shape, axis + 1, x.shape.size());
  Tensor y(out_shape);
  float* yp = y.ptr();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t index : attrs.indices) {
      const float* src = x.ptr() + (o * dim + (index < 0 ? index + dim : index)) * inner;
      yp = std::copy(src, src + inner, yp);
    }
  }
  return y;
}

Result<Tensor> pad(const Tensor& x, const PadAttrs& attrs) {
  TESSERA_ASSIGN_OR_RETURN(Shape out_shape, pad_output_shape(x.shape, attrs));
  Tensor y(out_shape);
  std::fill(y.data.begin(), y.data.end(), attrs.value);
  if (x.elements() == 0) return y;
  // Each of x's elements lands at its index plus the leading pads: a strided copy from y's view.
  const std::vector<int64_t> out_strides = row_major_strides(out_shape);
  int64_t base = 0;
  for (size_t d = 0; d < x.shape.size(); ++d) base += attrs.pads[d] * out_strides[d];
  const std::vector<int64_t> in_strides = row_major_strides(x.shape);
  const size_t r = x.shape.size();
  const int64_t inner = r == 0 ? 1 : x.shape[r - 1];
  std::vector<int64_t> index(r == 0 ? 0 : r - 1, 0);
  for (int64_t at = 0; at < x.elements(); at += inner) {
    int64_t offset = base;
    for (size_t d = 0; d + 1 < r; ++d) offset += index[d] * out_strides[d];
    std::copy(x.ptr() + at, x.ptr() + at + inner, y.ptr() + offset);
    for (size_t d = r - 1; r > 0 && d-- > 0;) {
      if (++index[d] < x.shape[d]) break;
      index[d] = 0;
    }
  }
  return y;
}

Result<Tensor> reduce_mean(const Tensor& x, const ReduceAttrs& attrs) {
  TESSERA_ASSIGN_OR_RETURN(Shape out_shape, reduce_output_shape(x.shape, attrs));
  TESSERA_ASSIGN_OR_RETURN(const std::vector<int> axes, reduce_axes(x.shape, attrs));
  // One run of consecutive axes at a time, last first: [outer, len, inner] -> [outer, inner].
  Tensor cur = x;
  Shape shape = x.shape;
  size_t i = axes.size();
  while (i > 0) {
    size_t j = i - 1;
    while (j > 0 && axes[j - 1] + 1 == axes[j]) --j;
    const auto first = static_cast<size_t>(axes[j]), last = static_cast<size_t>(axes[i - 1]);
    const int64_t outer = product(shape, 0, first), len = product(shape, first, last + 1);
    const int64_t inner = product(shape, last + 1, shape.size());
    Tensor next(Shape{outer, inner});
    const float* xp = cur.ptr();
    float* yp = next.ptr();
    const double scale = len == 0 ? 0.0 : 1.0 / static_cast<double>(len);
    parallel_for(outer, len * inner, int64_t{1} << 20, [&](int64_t begin, int64_t end) {
      std::vector<double> acc(static_cast<size_t>(inner));
      for (int64_t o = begin; o < end; ++o) {
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t k = 0; k < len; ++k) {
          const float* row = xp + (o * len + k) * inner;
          for (int64_t in = 0; in < inner; ++in) acc[static_cast<size_t>(in)] += row[in];
        }
        for (int64_t in = 0; in < inner; ++in)
          yp[o * inner + in] = static_cast<float>(acc[static_cast<size_t>(in)] * scale);
      }
    });
    for (size_t d = first; d <= last; ++d) shape[d] = 1;
    cur = std::move(next);
    i = j;
  }
  cur.shape = out_shape;
  return cur;
}

Result<Tensor> layer_norm(const Tensor& x, const Tensor& scale, const Tensor* bias, const LayerNormAttrs& attrs) {
  TESSERA_ASSIGN_OR_RETURN(Shape out_shape,
                           layer_norm_output_shape(x.shape, scale.shape, bias ? &bias->shape : nullptr, attrs));
  const auto axis = static_cast<size_t>(attrs.axis < 0 ? attrs.axis + x.rank() : attrs.axis);
  const int64_t len = product(x.shape, axis, x.shape.size());
  const int64_t rows = len == 0 ? 0 : x.elements() / len;
  Tensor y(out_shape);
  const float* g = scale.ptr();
  const float* b = bias ? bias->ptr() : nullptr;
  parallel_for(rows, 4 * len, int64_t{1} << 20, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* xp = x.ptr() + r * len;
      float* yp = y.ptr() + r * len;
      double sum = 0.0;
      for (int64_t k = 0; k < len; ++k) sum += xp[k];
      const double mean = sum / static_cast<double>(len);
      double var = 0.0;
      for (int64_t k = 0; k < len; ++k) var += (xp[k] - mean) * (xp[k] - mean);
      const double inv = 1.0 / std::sqrt(var / static_cast<double>(len) + attrs.epsilon);
      for (int64_t k = 0; k < len; ++k) {
        const auto v = static_cast<float>((xp[k] - mean) * inv);
        yp[k] = v * g[k] + (b ? b[k] : 0.0f);
      }
    }
  });
  return y;
}

}  // namespace tessera::host
