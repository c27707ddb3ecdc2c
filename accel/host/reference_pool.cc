// Reference MaxPool, AveragePool and GlobalAveragePool.
#include <algorithm>
#include <cmath>
#include <limits>

#include "accel/graph/op_shapes.h"
#include "accel/host/host_threads.h"
#include "accel/host/reference_ops.h"

namespace tessera::host {
namespace {

// One window along one dim: [begin, end) inside the input, and the extent counted by
// count_include_pad (clipped to the padded input, not beyond the trailing pad).
struct Window {
  int64_t begin, end, padded_extent;
};

Window window(int64_t out_index, int64_t in, int kernel, int stride, int pad_begin, int pad_end) {
  const int64_t start = out_index * stride - pad_begin;
  const int64_t stop = start + kernel;
  const int64_t padded_stop = std::min<int64_t>(stop, in + pad_end);
  return {std::max<int64_t>(start, 0), std::min(stop, in), padded_stop - start};
}

enum class PoolKind { kMax, kAverage };

// Window reads of a pooling layer above which its planes are split across the host's threads.
constexpr int64_t kSplitReads = int64_t{1} << 20;

Result<Tensor> pool2d(const Tensor& x, const PoolAttrs& attrs, PoolKind kind) {
  TESSERA_ASSIGN_OR_RETURN(Shape out_shape, pool_output_shape(x.shape, attrs));
  const int64_t planes = x.dim(0) * x.dim(1), h = x.dim(2), w = x.dim(3);
  const int64_t oh_n = out_shape[2], ow_n = out_shape[3];
  Tensor y(out_shape);
  const int64_t plane_reads = oh_n * ow_n * attrs.kernel[0] * attrs.kernel[1];
  parallel_for(planes, plane_reads, kSplitReads, [&](int64_t first, int64_t last) {
  for (int64_t p = first; p < last; ++p) {
    const float* xp = x.ptr() + p * h * w;
    float* yp = y.ptr() + p * oh_n * ow_n;
    for (int64_t oh = 0; oh < oh_n; ++oh) {
      const Window wh = window(oh, h, attrs.kernel[0], attrs.stride[0], attrs.pads[0], attrs.pads[2]);
      for (int64_t ow = 0; ow < ow_n; ++ow) {
        const Window ww = window(ow, w, attrs.kernel[1], attrs.stride[1], attrs.pads[1], attrs.pads[3]);
        float result;
        if (kind == PoolKind::kMax) {
          result = -std::numeric_limits<float>::infinity();
          for (int64_t ih = wh.begin; ih < wh.end; ++ih) {
            for (int64_t iw = ww.begin; iw < ww.end; ++iw) {
              const float v = xp[ih * w + iw];
              if (v > result || std::isnan(v)) result = v;  // NaN propagates, as in PyTorch
            }
          }
        } else {
          float sum = 0.0f;
          for (int64_t ih = wh.begin; ih < wh.end; ++ih) {
            for (int64_t iw = ww.begin; iw < ww.end; ++iw) sum += xp[ih * w + iw];
          }
          const int64_t count =
              attrs.count_include_pad ? wh.padded_extent * ww.padded_extent : (wh.end - wh.begin) * (ww.end - ww.begin);
          result = sum / static_cast<float>(count);
        }
        yp[oh * ow_n + ow] = result;
      }
    }
  }
  });
  return y;
}

}  // namespace

Result<Tensor> max_pool2d(const Tensor& x, const PoolAttrs& attrs) { return pool2d(x, attrs, PoolKind::kMax); }

Result<Tensor> average_pool2d(const Tensor& x, const PoolAttrs& attrs) { return pool2d(x, attrs, PoolKind::kAverage); }

Result<Tensor> global_average_pool(const Tensor& x) {
  TESSERA_ASSIGN_OR_RETURN(Shape out_shape, global_pool_output_shape(x.shape));
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t size = planes == 0 ? 0 : x.elements() / planes;
  Tensor y(out_shape);
  for (int64_t p = 0; p < planes; ++p) {
    const float* xp = x.ptr() + p * size;
    double sum = 0.0;
    for (int64_t i = 0; i < size; ++i) sum += xp[i];
    y.data[static_cast<size_t>(p)] = static_cast<float>(sum / static_cast<double>(size));
  }
  return y;
}

}  // namespace tessera::host
