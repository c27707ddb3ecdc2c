// The reference kernels' NHWC forms (reference_ops.h): what runs between oneDNN's convs, which work
// in NHWC, so the executor copies layouts only where an op has no NHWC form.
#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "accel/graph/op_shapes.h"
#include "accel/host/host_threads.h"
#include "accel/host/max_nan.h"
#include "accel/host/reference_ops.h"

namespace tessera::host {
namespace {

// Work (elements moved or read) above which these passes split across the host's threads.
constexpr int64_t kSplitWork = int64_t{1} << 18;

// Per image: dst[p * c + ch] = src[ch * plane + p] (to_nhwc) or the inverse, in 16 x 16 tiles;
// the parts split across threads are (image, 16 channels).
Tensor transpose_planes(const Tensor& x, bool to_nhwc) {
  Tensor y(x.shape);
  const int64_t n = x.dim(0), c = x.dim(1), plane = x.dim(2) * x.dim(3);
  constexpr int64_t kTile = 16;
  const int64_t tiles = (c + kTile - 1) / kTile;
  parallel_for(n * tiles, kTile * plane, kSplitWork, [&](int64_t begin, int64_t end) {
    for (int64_t unit = begin; unit < end; ++unit) {
      const int64_t img = unit / tiles, c0 = unit % tiles * kTile, c1 = std::min(c, c0 + kTile);
      const float* src = x.ptr() + img * c * plane;
      float* dst = y.ptr() + img * c * plane;
      for (int64_t p0 = 0; p0 < plane; p0 += kTile) {
        const int64_t p1 = std::min(plane, p0 + kTile);
        for (int64_t ch = c0; ch < c1; ++ch) {
          for (int64_t p = p0; p < p1; ++p) {
            if (to_nhwc) {
              dst[p * c + ch] = src[ch * plane + p];
            } else {
              dst[ch * plane + p] = src[p * c + ch];
            }
          }
        }
      }
    }
  });
  return y;
}

struct Span {
  int64_t begin, end;
};

std::vector<Span> pool_spans(int64_t out, int64_t in, int kernel, int stride, int pad_begin) {
  std::vector<Span> spans(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    const int64_t start = o * stride - pad_begin;
    spans[static_cast<size_t>(o)] = {std::max<int64_t>(start, 0), std::min<int64_t>(start + kernel, in)};
  }
  return spans;
}

}  // namespace

Tensor nchw_to_nhwc(const Tensor& x) { return transpose_planes(x, true); }
Tensor nhwc_to_nchw(const Tensor& x) { return transpose_planes(x, false); }

Result<Tensor> max_pool2d_nhwc(const Tensor& x, const PoolAttrs& attrs) {
  TESSERA_ASSIGN_OR_RETURN(Shape out_shape, pool_output_shape(x.shape, attrs));
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  const int64_t oh_n = out_shape[2], ow_n = out_shape[3];
  const std::vector<Span> rows = pool_spans(oh_n, h, attrs.kernel[0], attrs.stride[0], attrs.pads[0]);
  const std::vector<Span> cols = pool_spans(ow_n, w, attrs.kernel[1], attrs.stride[1], attrs.pads[1]);
  Tensor y(out_shape);
  parallel_for(n * oh_n, ow_n * c * attrs.kernel[0] * attrs.kernel[1], kSplitWork, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t img = r / oh_n, oh = r % oh_n;
      const Span& rs = rows[static_cast<size_t>(oh)];
      for (int64_t ow = 0; ow < ow_n; ++ow) {
        float* o = y.ptr() + ((img * oh_n + oh) * ow_n + ow) * c;
        std::fill(o, o + c, -std::numeric_limits<float>::infinity());
        const Span& cs = cols[static_cast<size_t>(ow)];
        for (int64_t ih = rs.begin; ih < rs.end; ++ih) {
          for (int64_t iw = cs.begin; iw < cs.end; ++iw) {
            const float* v = x.ptr() + ((img * h + ih) * w + iw) * c;
            for (int64_t ch = 0; ch < c; ++ch) o[ch] = max_nan(v[ch], o[ch]);
          }
        }
      }
    }
  });
  return y;
}

Result<Tensor> global_average_pool_nhwc(const Tensor& x) {
  TESSERA_ASSIGN_OR_RETURN(Shape out_shape, global_pool_output_shape(x.shape));
  const int64_t n = x.dim(0), c = x.dim(1), plane = x.dim(2) * x.dim(3);
  Tensor y(out_shape);
  std::vector<double> sum(static_cast<size_t>(c));
  for (int64_t img = 0; img < n; ++img) {
    std::fill(sum.begin(), sum.end(), 0.0);
    // Each channel's values in the order the NCHW form adds them: the same result.
    for (int64_t p = 0; p < plane; ++p) {
      const float* v = x.ptr() + (img * plane + p) * c;
      for (int64_t ch = 0; ch < c; ++ch) sum[static_cast<size_t>(ch)] += v[ch];
    }
    for (int64_t ch = 0; ch < c; ++ch) {
      y.data[static_cast<size_t>(img * c + ch)] =
          static_cast<float>(sum[static_cast<size_t>(ch)] / static_cast<double>(plane));
    }
  }
  return y;
}

Result<Tensor> concat_channels_nhwc(const std::vector<const Tensor*>& inputs) {
  std::vector<Shape> shapes;
  for (const Tensor* t : inputs) {
    if (t == nullptr) return Status::invalid_argument("an input is missing");
    shapes.push_back(t->shape);
  }
  TESSERA_ASSIGN_OR_RETURN(Shape out_shape, concat_output_shape(shapes, 1));
  if (out_shape.size() != 4) return Status::invalid_argument("an NHWC concat takes 4-D tensors");
  Tensor y(out_shape);
  const int64_t pixels = out_shape[0] * out_shape[2] * out_shape[3], c = out_shape[1];
  parallel_for(pixels, c, kSplitWork, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      float* o = y.ptr() + p * c;
      for (const Tensor* t : inputs) {
        const int64_t ci = t->dim(1);
        std::memcpy(o, t->ptr() + p * ci, static_cast<size_t>(ci) * sizeof(float));
        o += ci;
      }
    }
  });
  return y;
}

}  // namespace tessera::host
