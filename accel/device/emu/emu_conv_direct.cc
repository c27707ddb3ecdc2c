// The direct path of kOpConv for groups with few output channels (depthwise and the like),
// where im2col would cost more than the arithmetic: per output channel and row, accumulate
// kernel taps into an int32 row vectorised over output columns, then requantise the row.
#include <algorithm>
#include <vector>

#include "accel/device/emu/emu_conv_shape.h"

namespace tessera::emu {
namespace {

// acc[ox] += w * row[ox * stride + offset] for ox in [begin, end), modulo 2^32 like the
// accelerator's int32 accumulator (unsigned: no signed-overflow UB).
void accumulate_tap(const EmuKernels& kernels, uint32_t* acc, const int8_t* row, int32_t w, uint32_t begin,
                    uint32_t end, uint32_t stride, int32_t offset) {
  if (begin >= end) return;
  if (stride == 1) {
    kernels.mac_row(acc + begin, row + (static_cast<int32_t>(begin) + offset), w, end - begin);
  } else {
    for (uint32_t ox = begin; ox < end; ++ox) {
      acc[ox] += static_cast<uint32_t>(w * row[static_cast<int32_t>(ox * stride) + offset]);
    }
  }
}

}  // namespace

void conv_direct_channels(const LayerRun& run, const ConvShape& s, uint32_t n, uint32_t oc_begin, uint32_t oc_end,
                          uint32_t row_begin, uint32_t row_end) {
  thread_local std::vector<uint32_t> acc;
  acc.resize(s.conv_w);
  const uint32_t taps = s.kernel_h * s.kernel_w;
  // Output columns where every kernel column reads inside the input: there (stride 1) all taps
  // of a channel go through mac_taps in one pass; the edges take one tap at a time.
  uint32_t inner_begin = 0, inner_end = s.conv_w;
  for (uint32_t kx = 0; kx < s.kernel_w; ++kx) {
    inner_begin = std::max(inner_begin, s.ox_begin[kx]);
    inner_end = std::min(inner_end, s.ox_end[kx]);
  }
  if (s.stride_w != 1 || inner_begin >= inner_end) inner_begin = inner_end = 0;
  const int8_t* src[kMaxTaps];
  int32_t tap_weight[kMaxTaps];
  for (uint32_t oc = oc_begin; oc < oc_end; ++oc) {
    const uint32_t g = oc / s.out_per_group;
    const int8_t* in = conv_input(run, s, n, g);
    const int8_t* weights = run.weights + run.d.weight_offset + static_cast<size_t>(oc) * s.in_per_group * taps;
    const RequantParams q = conv_requant(run, oc);
    int8_t* out = conv_output(run, s, n, oc);
    for (uint32_t oy = row_begin; oy < row_end; ++oy) {
      std::fill(acc.begin(), acc.end(), 0u);
      for (uint32_t ic = 0; ic < s.in_per_group; ++ic) {
        uint32_t live = 0;  // taps of this channel on an in-range input row
        for (uint32_t ky = 0; ky < s.kernel_h; ++ky) {
          const int32_t iy = static_cast<int32_t>(oy * s.stride_h + ky * s.dilation_h) - s.pad_top;
          if (iy < 0 || iy >= static_cast<int32_t>(s.in_h)) continue;
          const int8_t* row = in + ic * s.in_plane + static_cast<size_t>(iy) * s.in_w;
          const int8_t* w = weights + (ic * s.kernel_h + ky) * s.kernel_w;
          for (uint32_t kx = 0; kx < s.kernel_w; ++kx) {
            const int32_t offset = static_cast<int32_t>(kx * s.dilation_w) - s.pad_left;
            if (inner_begin < inner_end) {
              src[live] = row + (static_cast<int32_t>(inner_begin) + offset);
              tap_weight[live++] = w[kx];
              accumulate_tap(run.kernels, acc.data(), row, w[kx], s.ox_begin[kx], std::min(s.ox_end[kx], inner_begin),
                             1, offset);
              accumulate_tap(run.kernels, acc.data(), row, w[kx], std::max(s.ox_begin[kx], inner_end), s.ox_end[kx], 1,
                             offset);
            } else {
              accumulate_tap(run.kernels, acc.data(), row, w[kx], s.ox_begin[kx], s.ox_end[kx], s.stride_w, offset);
            }
          }
        }
        if (live > 0) run.kernels.mac_taps(acc.data() + inner_begin, src, tap_weight, live, inner_end - inner_begin);
      }
      run.kernels.requantize_row(reinterpret_cast<const int32_t*>(acc.data()), s.conv_w, q.bias[0], q.multiplier[0],
                                 q.shift[0], q.lo, q.hi, out + static_cast<size_t>(oy) * s.conv_w);
    }
  }
}

}  // namespace tessera::emu
