// Reference MaxPool, AveragePool and GlobalAveragePool.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "accel/graph/op_shapes.h"
#include "accel/host/host_threads.h"
#include "accel/host/max_nan.h"
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

// Window reads of a pooling layer above which its planes are split across the host's threads.
constexpr int64_t kSplitReads = int64_t{1} << 20;

// The windows along one dim, one per output index.
std::vector<Window> windows(int64_t out, int64_t in, int kernel, int stride, int pad_begin, int pad_end) {
  std::vector<Window> ws(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) ws[static_cast<size_t>(o)] = window(o, in, kernel, stride, pad_begin, pad_end);
  return ws;
}

// Max pooling of one plane: per output row, the max down the window's input rows (`column`, whole
// rows, vectorised), then across each window's columns; the windows that lie inside the row
// (every tap a real input) run as whole-row passes, one per tap.
void max_pool_plane(const float* xp, int64_t w, const std::vector<Window>& rows, const std::vector<Window>& cols,
                    int kernel_w, int stride_w, int pad_left, float* yp, std::vector<float>& column) {
  const int64_t ow_n = static_cast<int64_t>(cols.size());
  // Output columns [lo, hi) whose window is whole and inside the input.
  int64_t lo = 0, hi = 0;
  for (int64_t ow = 0; ow < ow_n; ++ow) {
    const Window& c = cols[static_cast<size_t>(ow)];
    if (c.end - c.begin == kernel_w && c.begin == ow * stride_w - pad_left) {
      if (hi == lo) lo = ow;
      hi = ow + 1;
    } else if (hi > lo) {
      break;
    }
  }
  for (size_t oh = 0; oh < rows.size(); ++oh) {
    const Window& r = rows[oh];
    float* out = yp + static_cast<int64_t>(oh) * ow_n;
    const float* c = column.data();
    if (r.end - r.begin == 1) {
      c = xp + r.begin * w;
    } else {
      std::fill(column.begin(), column.end(), -std::numeric_limits<float>::infinity());
      for (int64_t ih = r.begin; ih < r.end; ++ih) {
        const float* row = xp + ih * w;
        float* col = column.data();
        for (int64_t iw = 0; iw < w; ++iw) col[iw] = max_nan(row[iw], col[iw]);
      }
    }
    auto edge = [&](int64_t ow) {
      const Window& win = cols[static_cast<size_t>(ow)];
      float m = -std::numeric_limits<float>::infinity();
      for (int64_t iw = win.begin; iw < win.end; ++iw) m = max_nan(c[iw], m);
      out[ow] = m;
    };
    for (int64_t ow = 0; ow < lo; ++ow) edge(ow);
    if (hi > lo) {
      const float* base = c + lo * stride_w - pad_left;
      float* o = out + lo;
      const int64_t n = hi - lo;
      if (stride_w == 1) {
        std::copy(base, base + n, o);
        for (int j = 1; j < kernel_w; ++j) {
          for (int64_t i = 0; i < n; ++i) o[i] = max_nan(base[i + j], o[i]);
        }
      } else {
        for (int64_t i = 0; i < n; ++i) o[i] = base[i * stride_w];
        for (int j = 1; j < kernel_w; ++j) {
          for (int64_t i = 0; i < n; ++i) o[i] = max_nan(base[i * stride_w + j], o[i]);
        }
      }
    }
    for (int64_t ow = hi; ow < ow_n; ++ow) edge(ow);
  }
}

void average_pool_plane(const float* xp, int64_t w, const std::vector<Window>& rows, const std::vector<Window>& cols,
                        bool count_include_pad, float* yp) {
  const int64_t ow_n = static_cast<int64_t>(cols.size());
  for (size_t oh = 0; oh < rows.size(); ++oh) {
    const Window& wh = rows[oh];
    for (int64_t ow = 0; ow < ow_n; ++ow) {
      const Window& ww = cols[static_cast<size_t>(ow)];
      float sum = 0.0f;
      for (int64_t ih = wh.begin; ih < wh.end; ++ih) {
        for (int64_t iw = ww.begin; iw < ww.end; ++iw) sum += xp[ih * w + iw];
      }
      const int64_t count =
          count_include_pad ? wh.padded_extent * ww.padded_extent : (wh.end - wh.begin) * (ww.end - ww.begin);
      yp[static_cast<int64_t>(oh) * ow_n + ow] = sum / static_cast<float>(count);
    }
  }
}

enum class PoolKind { kMax, kAverage };

Result<Tensor> pool2d(const Tensor& x, const PoolAttrs& attrs, PoolKind kind) {
  TESSERA_ASSIGN_OR_RETURN(Shape out_shape, pool_output_shape(x.shape, attrs));
  const int64_t planes = x.dim(0) * x.dim(1), h = x.dim(2), w = x.dim(3);
  const int64_t oh_n = out_shape[2], ow_n = out_shape[3];
  const std::vector<Window> rows = windows(oh_n, h, attrs.kernel[0], attrs.stride[0], attrs.pads[0], attrs.pads[2]);
  const std::vector<Window> cols = windows(ow_n, w, attrs.kernel[1], attrs.stride[1], attrs.pads[1], attrs.pads[3]);
  Tensor y(out_shape);
  const int64_t plane_reads = oh_n * ow_n * attrs.kernel[0] * attrs.kernel[1];
  parallel_for(planes, plane_reads, kSplitReads, [&](int64_t first, int64_t last) {
    std::vector<float> column(static_cast<size_t>(w));
    for (int64_t p = first; p < last; ++p) {
      const float* xp = x.ptr() + p * h * w;
      float* yp = y.ptr() + p * oh_n * ow_n;
      if (kind == PoolKind::kMax) {
        max_pool_plane(xp, w, rows, cols, attrs.kernel[1], attrs.stride[1], attrs.pads[1], yp, column);
      } else {
        average_pool_plane(xp, w, rows, cols, attrs.count_include_pad, yp);
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
