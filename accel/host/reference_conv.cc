// Reference Conv: oneDNN's where the build has it (onednn/onednn_conv.h); else im2col per image and
// group, then a GEMM (weights x columns) whose innermost loop runs along an output row, its rows
// (output channels) split across the host's threads.
#include <algorithm>
#include <cstring>

#include "accel/graph/op_shapes.h"
#include "accel/host/host_threads.h"
#include "accel/host/reference_gemm.h"
#include "accel/host/reference_ops.h"
#if TESSERA_HAVE_ONEDNN
#include "accel/host/onednn/onednn_conv.h"
#endif

namespace tessera::host {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Multiply-adds of one conv above which it is split across threads: ~100 us on one core (the
// portable GEMM's ~10 GMAC/s, oneDNN's ~80), against tens of microseconds for a thread start.
constexpr int64_t kConvSplitMacs = int64_t{1} << 20;
#if TESSERA_HAVE_ONEDNN
constexpr int64_t kOnednnSplitMacs = int64_t{1} << 23;
#endif

// Geometry of one conv, resolved once.
struct ConvGeometry {
  int64_t channels, height, width;  // per group input channels, input size
  int64_t out_h, out_w;
  int64_t kh, kw, sh, sw, dh, dw, pad_top, pad_left;
};

// Writes the columns of one group's input: row (c, i, j) holds, for every output position, the
// input value under kernel tap (i, j) of channel c (0 in the padding).
void im2col(const float* x, const ConvGeometry& g, float* col) {
  const int64_t plane = g.out_h * g.out_w;
  for (int64_t c = 0; c < g.channels; ++c) {
    const float* xc = x + c * g.height * g.width;
    for (int64_t i = 0; i < g.kh; ++i) {
      for (int64_t j = 0; j < g.kw; ++j) {
        float* row = col + ((c * g.kh + i) * g.kw + j) * plane;
        // Input column of output column ow is ow * sw + offset; [lo, hi) lands inside the input.
        const int64_t offset = j * g.dw - g.pad_left;
        const int64_t lo = std::min(g.out_w, offset >= 0 ? 0 : ceil_div(-offset, g.sw));
        const int64_t hi =
            std::max(lo, std::min(g.out_w, g.width - offset <= 0 ? 0 : ceil_div(g.width - offset, g.sw)));
        for (int64_t oh = 0; oh < g.out_h; ++oh) {
          float* dst = row + oh * g.out_w;
          const int64_t ih = oh * g.sh - g.pad_top + i * g.dh;
          if (ih < 0 || ih >= g.height) {
            std::fill(dst, dst + g.out_w, 0.0f);
            continue;
          }
          const float* src = xc + ih * g.width;
          std::fill(dst, dst + lo, 0.0f);
          if (g.sw == 1) {
            std::memcpy(dst + lo, src + lo + offset, static_cast<size_t>(hi - lo) * sizeof(float));
          } else {
            for (int64_t ow = lo; ow < hi; ++ow) dst[ow] = src[ow * g.sw + offset];
          }
          std::fill(dst + hi, dst + g.out_w, 0.0f);
        }
      }
    }
  }
}

}  // namespace

Result<Tensor> conv2d_portable(const Tensor& x, const Tensor& w, const Tensor* bias, const ConvAttrs& attrs,
                               const Activation& activation) {
  TESSERA_ASSIGN_OR_RETURN(Shape out_shape, conv_output_shape(x.shape, w.shape, bias ? &bias->shape : nullptr, attrs));
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), wd = x.dim(3);
  const int64_t m = w.dim(0), group = attrs.group;
  const int64_t cg = c / group, mg = m / group;
  const ConvGeometry g{cg,
                       h,
                       wd,
                       out_shape[2],
                       out_shape[3],
                       w.dim(2),
                       w.dim(3),
                       attrs.stride[0],
                       attrs.stride[1],
                       attrs.dilation[0],
                       attrs.dilation[1],
                       attrs.pads[0],
                       attrs.pads[1]};
  const int64_t plane = g.out_h * g.out_w;
  const int64_t k = cg * g.kh * g.kw;
  // A 1x1, stride-1, unpadded conv reads its input directly as the column matrix.
  const bool direct = g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.pad_top == 0 && g.pad_left == 0 &&
                      g.out_h == h && g.out_w == wd;
  std::vector<float> col(direct ? 0 : static_cast<size_t>(k * plane));
  Tensor y(out_shape);
  // The GEMM's rows (output channels) across the threads the budget gives, when a group's GEMM
  // is big enough to pay for a thread start (see host_threads.h).
  const HostThreads threads(mg * plane * k >= kConvSplitMacs ? host_thread_limit() : 1);
  for (int64_t img = 0; img < n; ++img) {
    for (int64_t gi = 0; gi < group; ++gi) {
      const float* xg = x.ptr() + (img * c + gi * cg) * h * wd;
      float* yg = y.ptr() + (img * m + gi * mg) * plane;
      if (bias != nullptr) {
        for (int64_t oc = 0; oc < mg; ++oc) {
          std::fill(yg + oc * plane, yg + (oc + 1) * plane, bias->data[static_cast<size_t>(gi * mg + oc)]);
        }
      }
      if (!direct) im2col(xg, g, col.data());
      const float* cols = direct ? xg : col.data();
      const float* wg = w.ptr() + gi * mg * k;
      parallel_parts(threads, mg, 1, [&](int64_t begin, int64_t end) {
        sgemm_accumulate(end - begin, plane, k, wg + begin * k, k, cols, plane, yg + begin * plane, plane);
        apply_activation(activation, yg + begin * plane, yg + end * plane);
      });
    }
  }
  return y;
}

bool conv2d_prefers_nhwc() {
#if TESSERA_HAVE_ONEDNN
  return onednn_conv_enabled();
#else
  return false;
#endif
}

Result<Tensor> conv2d(const Tensor& x, const Tensor& w, const Tensor* bias, const ConvAttrs& attrs,
                      const ConvOptions& options) {
#if TESSERA_HAVE_ONEDNN
  if (onednn_conv_enabled()) {
    TESSERA_ASSIGN_OR_RETURN(Shape out_shape,
                             conv_output_shape(x.shape, w.shape, bias ? &bias->shape : nullptr, attrs));
    const int64_t macs = shape_elements(out_shape) * w.dim(1) * w.dim(2) * w.dim(3);
    const HostThreads threads(macs >= kOnednnSplitMacs ? host_thread_limit() : 1);
    return onednn_conv2d(x, w, bias, attrs, out_shape, threads, options);
  }
#endif
  // The portable conv is NCHW: NHWC in or out costs a copy.
  if (options.src_nhwc && x.rank() == 4) {
    ConvOptions nchw = options;
    nchw.src_nhwc = false;
    return conv2d(nhwc_to_nchw(x), w, bias, attrs, nchw);
  }
  TESSERA_ASSIGN_OR_RETURN(Tensor y, conv2d_portable(x, w, bias, attrs, options.activation));
  if (options.dst_nhwc) return nchw_to_nhwc(y);
  return y;
}

}  // namespace tessera::host
