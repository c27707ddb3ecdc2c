// The direct path of kOpConv for groups with few output channels (depthwise and the like),
// where im2col would cost more than the arithmetic: per output channel, accumulate kernel taps
// into int32 over all of a task's output pixels in one kernels.mac_taps call per input channel
// (depthwise: per chunk of kChunkPixels), then requantise them in one pass.
//
// A task's input rows of one input channel are first copied once into zero-padded stride
// phases: phase (py, px) holds padded rows py, py + stride_h, ... and padded columns px,
// px + stride_w, ..., as a plane `width` columns wide (conv_w plus the largest column offset of a
// tap). Tap (ky, kx) then reads, for output pixel (r, ox) of the task, phase ((ky * dilation_h) %
// stride_h, (kx * dilation_w) % stride_w) at (r + (ky * dilation_h) / stride_h, ox + (kx *
// dilation_w) / stride_w): with pixels numbered p = r * width + ox ("virtual pixels", as the
// implicit GEMM's), every tap reads one contiguous run of its phase, so one kernels.mac_taps call
// covers every output pixel of the channel, padding, stride and dilation included, and the
// padded columns' sums (ox >= conv_w) are computed and dropped. Before, mac_taps ran once per
// output row: the late layers' rows of 7 or 14 pixels left most SIMD lanes empty and paid a
// call per row (MobileNetV2's 7x7 and 14x14 depthwise layers ran at 1-4 GMAC/s).
//
// The phases come from one zero-padded copy of the rows (stride_w * width columns, its rows in
// row-phase order: padded rows py, py + stride_h, ... together), whose columns are then split
// into the stride_w column phases in one pass over the whole copy (copy_stride2 at stride 2), so
// a channel costs a row copy per input row and stride_w passes, not a call per phase row. The
// copy's zeros (padding rows and columns) sit at the same places for every channel of a layer's
// task shape, so a thread zeroes its copy only when the shape changes.
#include <algorithm>
#include <cstring>
#include <vector>

#include "accel/device/emu/emu_conv_shape.h"

namespace tessera::emu {
namespace {

// memcpy for the short rows of small maps (7 or 14 bytes) without a call into the C library: two
// fixed-size copies that overlap in the middle, as memcpy does inside.
inline void copy_row(int8_t* to, const int8_t* from, size_t n) {
  if (n >= 16) {
    std::memcpy(to, from, n);
  } else if (n >= 8) {
    std::memcpy(to, from, 8);
    std::memcpy(to + n - 8, from + n - 8, 8);
  } else if (n >= 4) {
    std::memcpy(to, from, 4);
    std::memcpy(to + n - 4, from + n - 4, 4);
  } else {
    for (size_t i = 0; i < n; ++i) to[i] = from[i];
  }
}

// Virtual pixels a depthwise channel's accumulators take at a time (4 KB: L1 with the phases).
constexpr uint32_t kChunkPixels = 1024;

// One task's phase planes of one input channel (see above).
struct PhasePlanes {
  uint32_t width, height;  // columns and rows of a phase plane
  size_t plane_bytes;      // width * height
  size_t padded_bytes;     // the padded copy: stride_h * height rows of stride_w * width
};

PhasePlanes phase_geometry(const ConvShape& s, uint32_t rows) {
  PhasePlanes g{};
  g.width = s.conv_w + (s.kernel_w - 1) * s.dilation_w / s.stride_w;
  g.height = rows + (s.kernel_h - 1) * s.dilation_h / s.stride_h;
  g.plane_bytes = static_cast<size_t>(g.width) * g.height;
  g.padded_bytes = g.plane_bytes * s.stride_h * s.stride_w;
  return g;
}

// What decides where a padded copy's zeros are: a thread's copy keeps them while this repeats.
struct CopyShape {
  const int8_t* buffer;
  uint32_t width, height, row_begin, in_h, in_w, stride_h, stride_w;
  int32_t pad_top, pad_left;
  bool operator==(const CopyShape&) const = default;
};

// Phase planes of one input channel in `buffer` (grown as needed): the padded copy, then the
// stride_w column phases when stride_w > 1. Returns the start of phase (0, 0); phase (py, px)
// is at that + (px * stride_h + py) * plane_bytes.
const int8_t* build_phases(const ConvShape& s, const PhasePlanes& g, const int8_t* plane, uint32_t row_begin,
                           std::vector<int8_t>& buffer, CopyShape& last) {
  const size_t split_bytes = s.stride_w > 1 ? g.padded_bytes : 0;
  const size_t need = g.padded_bytes + split_bytes + 64;  // copy_stride2 reads one byte past its input
  if (buffer.size() < need) buffer.resize(need);
  int8_t* padded = buffer.data();
  const uint32_t padded_w = s.stride_w * g.width;
  const CopyShape shape{buffer.data(), g.width,    g.height,   row_begin, s.in_h,
                        s.in_w,        s.stride_h, s.stride_w, s.pad_top, s.pad_left};
  if (!(shape == last)) {
    std::memset(padded, 0, g.padded_bytes + split_bytes + 64);
    last = shape;
  }
  // Input columns [x0, x1) land in the copy at padded column x + pad_left.
  const uint32_t x0 = s.pad_left < 0 ? static_cast<uint32_t>(-s.pad_left) : 0;
  const int64_t x_end = std::min<int64_t>(s.in_w, static_cast<int64_t>(padded_w) - s.pad_left);
  const uint32_t columns = x_end > x0 ? static_cast<uint32_t>(x_end - x0) : 0;
  for (uint32_t py = 0; py < s.stride_h; ++py) {
    for (uint32_t r = 0; r < g.height && columns > 0; ++r) {
      // Padded row (row_begin + r) * stride_h + py, input row that - pad_top.
      const int64_t iy = static_cast<int64_t>(row_begin + r) * s.stride_h + py - s.pad_top;
      if (iy < 0 || iy >= s.in_h) continue;  // padding: zeros already
      int8_t* to = padded + (static_cast<size_t>(py) * g.height + r) * padded_w + (x0 + s.pad_left);
      copy_row(to, plane + static_cast<size_t>(iy) * s.in_w + x0, columns);
    }
  }
  if (s.stride_w == 1) return padded;
  int8_t* split = padded + g.padded_bytes;
  const size_t count = g.padded_bytes / s.stride_w;  // bytes per column phase
  for (uint32_t px = 0; px < s.stride_w; ++px) {
    int8_t* out = split + px * count;
    if (s.stride_w == 2) {
      copy_stride2(out, padded + px, static_cast<uint32_t>(count));
    } else {
      for (size_t i = 0; i < count; ++i) out[i] = padded[i * s.stride_w + px];
    }
  }
  return split;
}

// One task of the direct path (image n, output rows [row_begin, row_begin + rows)): its phase
// geometry, where each tap starts in the phases, and the thread's buffers.
class DirectTask {
 public:
  DirectTask(const LayerRun& run, const ConvShape& s, uint32_t n, uint32_t row_begin, uint32_t row_end)
      : run_(run),
        s_(s),
        n_(n),
        row_begin_(row_begin),
        rows_(row_end - row_begin),
        g_(phase_geometry(s, row_end - row_begin)),
        taps_(s.kernel_h * s.kernel_w),
        pixels_((rows_ - 1) * g_.width + s.conv_w) {
    for (uint32_t ky = 0; ky < s.kernel_h; ++ky) {
      for (uint32_t kx = 0; kx < s.kernel_w; ++kx) {
        const uint32_t vy = ky * s.dilation_h, vx = kx * s.dilation_w;
        const size_t phase = static_cast<size_t>(vx % s.stride_w) * s.stride_h + vy % s.stride_h;
        tap_offset_[ky * s.kernel_w + kx] =
            phase * g_.plane_bytes + static_cast<size_t>(vy / s.stride_h) * g_.width + vx / s.stride_w;
      }
    }
  }

  // Depthwise (in_per_group 1): output channels [oc0, oc1) of one group. The sums go through
  // the accumulators a chunk of pixels at a time, which stay in L1 between mac_taps and the
  // requantisation (a 112x112 plane's are 50 KB).
  void depthwise(uint32_t oc0, uint32_t oc1, const int8_t* in) {
    const int8_t* phases = build_phases(s_, g_, in, row_begin_, buffer_, last_);
    if (acc_.size() < kChunkPixels) acc_.resize(kChunkPixels);
    for (uint32_t oc = oc0; oc < oc1; ++oc) {
      load_weights(oc, 0);
      const RequantParams q = conv_requant(run_, oc);
      int8_t* dest = destination(oc);
      for (uint32_t p0 = 0; p0 < pixels_; p0 += kChunkPixels) {
        const uint32_t count = std::min(kChunkPixels, pixels_ - p0);
        for (uint32_t t = 0; t < taps_; ++t) src_[t] = phases + tap_offset_[t] + p0;
        std::fill_n(acc_.data(), count, 0u);
        run_.kernels.mac_taps(acc_.data(), src_, tap_weight_, taps_, count);
        run_.kernels.requantize_row(reinterpret_cast<const int32_t*>(acc_.data()), count, q.bias[0], q.multiplier[0],
                                    q.shift[0], q.lo, q.hi, dest + p0);
      }
      copy_out(oc);
    }
  }

  // Any group (in_per_group input channels from `in`): output channels [oc0, oc1) of one group,
  // each input channel's phases built once for all of them.
  void grouped(uint32_t oc0, uint32_t oc1, const int8_t* in) {
    acc_.assign(static_cast<size_t>(oc1 - oc0) * pixels_, 0u);
    for (uint32_t ic = 0; ic < s_.in_per_group; ++ic) {
      const int8_t* phases = build_phases(s_, g_, in + ic * s_.in_plane, row_begin_, buffer_, last_);
      for (uint32_t t = 0; t < taps_; ++t) src_[t] = phases + tap_offset_[t];
      for (uint32_t oc = oc0; oc < oc1; ++oc) {
        load_weights(oc, ic);
        run_.kernels.mac_taps(acc_.data() + static_cast<size_t>(oc - oc0) * pixels_, src_, tap_weight_, taps_, pixels_);
      }
    }
    for (uint32_t oc = oc0; oc < oc1; ++oc) {
      const RequantParams q = conv_requant(run_, oc);
      const auto* sums = reinterpret_cast<const int32_t*>(acc_.data()) + static_cast<size_t>(oc - oc0) * pixels_;
      run_.kernels.requantize_row(sums, pixels_, q.bias[0], q.multiplier[0], q.shift[0], q.lo, q.hi, destination(oc));
      copy_out(oc);
    }
  }

 private:
  void load_weights(uint32_t oc, uint32_t ic) {
    const int8_t* w = run_.weights + run_.d.weight_offset + (static_cast<size_t>(oc) * s_.in_per_group + ic) * taps_;
    for (uint32_t t = 0; t < taps_; ++t) tap_weight_[t] = w[t];
  }

  int8_t* output_rows(uint32_t oc) const {
    return conv_output(run_, s_, n_, oc) + static_cast<size_t>(row_begin_) * s_.conv_w;
  }

  // Where output channel oc's requantised virtual pixels go: straight into its rows when the
  // phases have no padded columns, else into requantized_, whose rows copy_out() then drops them from.
  int8_t* destination(uint32_t oc) {
    if (g_.width == s_.conv_w) return output_rows(oc);
    if (requantized_.size() < pixels_) requantized_.resize(pixels_);
    return requantized_.data();
  }

  void copy_out(uint32_t oc) {
    if (g_.width == s_.conv_w) return;
    int8_t* out = output_rows(oc);
    for (uint32_t r = 0; r < rows_; ++r) {
      copy_row(out + static_cast<size_t>(r) * s_.conv_w, requantized_.data() + static_cast<size_t>(r) * g_.width,
               s_.conv_w);
    }
  }

  const LayerRun& run_;
  const ConvShape& s_;
  uint32_t n_, row_begin_, rows_;
  PhasePlanes g_;
  uint32_t taps_, pixels_;       // pixels_: virtual pixels of the task
  size_t tap_offset_[kMaxTaps];  // tap t's start relative to phase (0, 0)
  const int8_t* src_[kMaxTaps];
  int32_t tap_weight_[kMaxTaps];
  // The thread's buffers, kept between tasks (and the shape of its padded copy's zeros).
  static thread_local std::vector<uint32_t> acc_;
  static thread_local std::vector<int8_t> buffer_, requantized_;
  static thread_local CopyShape last_;
};

thread_local std::vector<uint32_t> DirectTask::acc_;
thread_local std::vector<int8_t> DirectTask::buffer_;
thread_local std::vector<int8_t> DirectTask::requantized_;
thread_local CopyShape DirectTask::last_{};

}  // namespace

void conv_direct_channels(const LayerRun& run, const ConvShape& s, uint32_t n, uint32_t oc_begin, uint32_t oc_end,
                          uint32_t row_begin, uint32_t row_end) {
  DirectTask task(run, s, n, row_begin, row_end);
  // Group by group: each input channel's phases are built once and serve the task's output
  // channels of its group (a channel multiplier > 1 reads the same planes).
  for (uint32_t oc0 = oc_begin; oc0 < oc_end;) {
    const uint32_t group = oc0 / s.out_per_group;
    const uint32_t oc1 = std::min(oc_end, (group + 1) * s.out_per_group);
    if (s.in_per_group == 1) {
      task.depthwise(oc0, oc1, conv_input(run, s, n, group));
    } else {
      task.grouped(oc0, oc1, conv_input(run, s, n, group));
    }
    oc0 = oc1;
  }
}

}  // namespace tessera::emu
