// The direct path of kOpConv for groups with few output channels (depthwise and the like),
// where im2col would cost more than the arithmetic: per output channel and row, accumulate
// kernel taps into an int32 row vectorised over output columns, then requantise the row.
//
// Each input row a task reads is first copied once into its stride phases with the horizontal
// padding written out as zeros: phase p holds padded columns p, p + stride, ... So the output
// columns of every kernel column kx read one contiguous run of a phase (ox + (kx * dilation) /
// stride in phase (kx * dilation) % stride), stride 2 included, and all taps of an input
// channel go through the kernels' mac_taps over the whole row, with no edge cases.
#include <algorithm>
#include <cstring>
#include <vector>

#include "accel/device/emu/emu_conv_shape.h"

namespace tessera::emu {
namespace {

// Input rows of one input channel in stride phases (see above).
struct PhasedRows {
  uint32_t phases, width;  // width: bytes per phase row (padded, plus slack)
  int32_t first_row;       // input row of the buffer's first row
  std::vector<int8_t>* buffer;

  const int8_t* at(int32_t iy, uint32_t phase) const {
    return buffer->data() + (static_cast<size_t>(iy - first_row) * phases + phase) * width;
  }
};

// Copies input rows [first, last) of `plane` into phases: padded column c (input column c -
// pad_left, zero outside the input) goes to phase c % stride, position c / stride.
PhasedRows phase_rows(const ConvShape& s, const int8_t* plane, int32_t first, int32_t last,
                      std::vector<int8_t>& buffer) {
  PhasedRows rows{};
  rows.phases = s.stride_w;
  const uint32_t span = (s.conv_w - 1) * s.stride_w + (s.kernel_w - 1) * s.dilation_w + 1;  // padded columns read
  rows.width = (span + s.stride_w - 1) / s.stride_w + 16;
  rows.first_row = first;
  rows.buffer = &buffer;
  const size_t row_bytes = static_cast<size_t>(rows.phases) * rows.width;
  // Only the bytes no input column lands on are zeroed (the copies below write the rest).
  const size_t bytes = static_cast<size_t>(last - first) * row_bytes;
  if (buffer.size() < bytes) buffer.resize(bytes);
  for (int32_t iy = first; iy < last; ++iy) {
    const int8_t* in = plane + static_cast<size_t>(iy) * s.in_w;
    int8_t* out = buffer.data() + static_cast<size_t>(iy - first) * row_bytes;
    // Input column x is padded column x + pad_left; only those below span are ever read.
    const uint32_t limit = std::min<uint32_t>(
        s.in_w, span > static_cast<uint32_t>(s.pad_left) ? span - static_cast<uint32_t>(s.pad_left) : 0);
    if (s.stride_w == 1) {
      const uint32_t pad = std::min<uint32_t>(static_cast<uint32_t>(s.pad_left), rows.width);
      const uint32_t body = std::min<uint32_t>(limit, rows.width - pad);
      std::memset(out, 0, pad);
      if (body > 0) std::memcpy(out + pad, in, body);
      std::memset(out + pad + body, 0, rows.width - pad - body);
      continue;
    }
    for (uint32_t p = 0; p < s.stride_w; ++p) {
      // Phase p's position i is padded column p + stride * i, input column x = that - pad_left.
      const uint32_t pad = static_cast<uint32_t>(s.pad_left);
      const uint32_t i0 = std::min(rows.width, p >= pad ? 0 : (pad - p + s.stride_w - 1) / s.stride_w);
      // First i with x >= limit.
      const uint32_t i1 = std::clamp((limit + pad + s.stride_w - 1 - p) / s.stride_w, i0, rows.width);
      int8_t* phase = out + p * rows.width;
      std::memset(phase, 0, i0);
      std::memset(phase + i1, 0, rows.width - i1);
      if (i0 >= i1) continue;
      const int8_t* from = in + (p + s.stride_w * i0 - pad);
      int8_t* to = phase + i0;
      if (s.stride_w == 2) {
        copy_stride2(to, from, i1 - i0);
      } else {
        for (uint32_t i = 0; i < i1 - i0; ++i) to[i] = from[static_cast<size_t>(i) * s.stride_w];
      }
    }
  }
  return rows;
}

}  // namespace

void conv_direct_channels(const LayerRun& run, const ConvShape& s, uint32_t n, uint32_t oc_begin, uint32_t oc_end,
                          uint32_t row_begin, uint32_t row_end) {
  thread_local std::vector<uint32_t> acc;
  thread_local std::vector<int8_t> buffer;
  const uint32_t taps = s.kernel_h * s.kernel_w;
  // Input rows the task's output rows read, clipped to the input (rows outside are padding).
  const int32_t first = std::max<int32_t>(0, static_cast<int32_t>(row_begin * s.stride_h) - s.pad_top);
  const int32_t end_row =
      static_cast<int32_t>((row_end - 1) * s.stride_h + (s.kernel_h - 1) * s.dilation_h + 1) - s.pad_top;
  const int32_t last = std::max(first, std::min<int32_t>(static_cast<int32_t>(s.in_h), end_row));
  const int8_t* src[kMaxTaps];
  int32_t tap_weight[kMaxTaps];
  uint32_t phase[abi::kMaxKernel], offset[abi::kMaxKernel];  // kernel column kx's phase and start in it
  for (uint32_t kx = 0; kx < s.kernel_w; ++kx) {
    phase[kx] = kx * s.dilation_w % s.stride_w;
    offset[kx] = kx * s.dilation_w / s.stride_w;
  }
  for (uint32_t oc = oc_begin; oc < oc_end; ++oc) {
    const uint32_t g = oc / s.out_per_group;
    const int8_t* in = conv_input(run, s, n, g);
    const int8_t* weights = run.weights + run.d.weight_offset + static_cast<size_t>(oc) * s.in_per_group * taps;
    acc.assign(static_cast<size_t>(row_end - row_begin) * s.conv_w, 0u);
    for (uint32_t ic = 0; ic < s.in_per_group; ++ic) {
      const PhasedRows rows = phase_rows(s, in + ic * s.in_plane, first, last, buffer);
      for (uint32_t oy = row_begin; oy < row_end; ++oy) {
        uint32_t live = 0;  // taps of this channel on an in-range input row
        for (uint32_t ky = 0; ky < s.kernel_h; ++ky) {
          const int32_t iy = static_cast<int32_t>(oy * s.stride_h + ky * s.dilation_h) - s.pad_top;
          if (iy < first || iy >= last) continue;
          const int8_t* w = weights + (ic * s.kernel_h + ky) * s.kernel_w;
          for (uint32_t kx = 0; kx < s.kernel_w; ++kx) {
            src[live] = rows.at(iy, phase[kx]) + offset[kx];
            tap_weight[live++] = w[kx];
          }
        }
        if (live > 0) run.kernels.mac_taps(acc.data() + (oy - row_begin) * s.conv_w, src, tap_weight, live, s.conv_w);
      }
    }
    const RequantParams q = conv_requant(run, oc);
    int8_t* out = conv_output(run, s, n, oc);
    for (uint32_t oy = row_begin; oy < row_end; ++oy) {
      run.kernels.requantize_row(reinterpret_cast<const int32_t*>(acc.data()) + (oy - row_begin) * s.conv_w, s.conv_w,
                                 q.bias[0], q.multiplier[0], q.shift[0], q.lo, q.hi,
                                 out + static_cast<size_t>(oy) * s.conv_w);
    }
  }
}

}  // namespace tessera::emu
