// kOpPool (max and average) and the max-pool plane shared with kOpConv's fused pool. Windows
// are clipped to the input: padded positions never win a max and are never summed.
#include <algorithm>
#include <vector>

#include "accel/device/emu/emu_conv_shape.h"

namespace tessera::emu {
namespace {

// A window clipped to [0, size): [begin, end), empty when begin >= end.
struct Span {
  int32_t begin, end;
};
Span clip(uint32_t index, uint32_t stride, uint32_t pad, uint32_t window, uint32_t size) {
  const int32_t start = static_cast<int32_t>(index * stride) - static_cast<int32_t>(pad);
  return {std::max(start, 0), std::min(start + static_cast<int32_t>(window), static_cast<int32_t>(size))};
}

// Average pool of one plane: window sums (int32), requantised with the layer's {M, S}. The sums
// down a window's rows are the kernels' mac_row with weight 1 (modulo 2^32, the same int32 sums:
// a window of int8 values cannot overflow).
void average_pool_plane(const EmuKernels& kernels, const int8_t* src, uint32_t in_h, uint32_t in_w,
                        const PoolWindow& win, int8_t* dst, uint32_t out_h, uint32_t out_w, const RequantParams& q) {
  thread_local std::vector<uint32_t> column_sum;
  column_sum.resize(in_w);
  for (uint32_t oy = 0; oy < out_h; ++oy) {
    const Span rows = clip(oy, win.stride_h, win.pad_top, win.h, in_h);
    std::fill(column_sum.begin(), column_sum.end(), 0u);
    for (int32_t y = rows.begin; y < rows.end; ++y) {
      kernels.mac_row(column_sum.data(), src + static_cast<size_t>(y) * in_w, 1, in_w);
    }
    for (uint32_t ox = 0; ox < out_w; ++ox) {
      const Span cols = clip(ox, win.stride_w, win.pad_left, win.w, in_w);
      uint32_t sum = 0;
      for (int32_t x = cols.begin; x < cols.end; ++x) sum += column_sum[x];
      dst[static_cast<size_t>(oy) * out_w + ox] =
          static_cast<int8_t>(abi::requantize(static_cast<int32_t>(sum), q.multiplier[0], q.shift[0], q.lo, q.hi));
    }
  }
}

}  // namespace

void max_pool_plane(const EmuKernels& kernels, const int8_t* src, uint32_t in_h, uint32_t in_w, const PoolWindow& win,
                    int8_t* dst, uint32_t out_h, uint32_t out_w) {
  const MaxPoolArgs args{src,          in_h,        in_w,         win.h, win.w, win.stride_h,
                         win.stride_w, win.pad_top, win.pad_left, dst,   out_h, out_w};
  if (kernels.max_pool != nullptr && kernels.max_pool(args)) return;
  // Column maxima of a window's rows (readable 32 bytes past in_w: copy_stride2's last step).
  thread_local std::vector<int8_t> column_max, gathered;
  column_max.resize(in_w + 32);
  gathered.resize(out_w);
  for (uint32_t oy = 0; oy < out_h; ++oy) {
    int8_t* out = dst + static_cast<size_t>(oy) * out_w;
    const Span rows = clip(oy, win.stride_h, win.pad_top, win.h, in_h);
    // The first row is copied, not max'ed into INT8_MIN (the same bytes, one pass fewer).
    if (rows.begin < rows.end) {
      std::copy_n(src + static_cast<size_t>(rows.begin) * in_w, in_w, column_max.begin());
    } else {
      std::fill(column_max.begin(), column_max.begin() + in_w, INT8_MIN);
    }
    for (int32_t y = rows.begin + 1; y < rows.end; ++y)
      kernels.max_row(column_max.data(), src + static_cast<size_t>(y) * in_w, in_w);
    // Across: window column kx of outputs [first, end) reads column ox * stride + kx - pad_left,
    // in range there; each kx is one max_row over those outputs (a stride-2 gather first). The
    // first kx that covers every output is written straight into the row instead (the same bytes
    // as max'ing it into INT8_MIN), the others max'ed into it; where none covers all, the row
    // starts at INT8_MIN.
    const auto span_of = [&](uint32_t kx, int64_t& first, int64_t& end) {
      const int64_t offset = static_cast<int64_t>(kx) - win.pad_left;
      first = offset >= 0 ? 0 : (-offset + win.stride_w - 1) / win.stride_w;
      const int64_t last_x = static_cast<int64_t>(in_w) - 1 - offset;
      end = std::min<int64_t>(out_w, last_x < 0 ? 0 : last_x / win.stride_w + 1);
      return column_max.data() + (first * win.stride_w + offset);
    };
    uint32_t full = win.w;
    for (uint32_t kx = 0; kx < win.w && full == win.w; ++kx) {
      int64_t first = 0, end = 0;
      span_of(kx, first, end);
      if (first == 0 && end == out_w) full = kx;
    }
    if (full < win.w) {
      int64_t first = 0, end = 0;
      const int8_t* from = span_of(full, first, end);
      if (win.stride_w == 1) {
        std::copy_n(from, out_w, out);
      } else if (win.stride_w == 2) {
        copy_stride2(out, from, out_w);
      } else {
        for (uint32_t i = 0; i < out_w; ++i) out[i] = from[static_cast<size_t>(i) * win.stride_w];
      }
    } else {
      std::fill(out, out + out_w, INT8_MIN);
    }
    for (uint32_t kx = 0; kx < win.w; ++kx) {
      if (kx == full) continue;
      int64_t first = 0, end = 0;
      const int8_t* from = span_of(kx, first, end);
      if (first >= end) continue;
      const auto count = static_cast<uint32_t>(end - first);
      if (win.stride_w == 1) {
        kernels.max_row(out + first, from, count);
        continue;
      }
      if (win.stride_w == 2) {
        copy_stride2(gathered.data(), from, count);
      } else {
        for (uint32_t i = 0; i < count; ++i) gathered[i] = from[static_cast<size_t>(i) * win.stride_w];
      }
      kernels.max_row(out + first, gathered.data(), count);
    }
  }
}

bool run_pool(const LayerRun& run) {
  const abi::LayerDesc& d = run.d;
  const PoolWindow win{d.pool_h, d.pool_w, d.pool_stride_h, d.pool_stride_w, d.pool_pad_top, d.pool_pad_left};
  const size_t in_plane = static_cast<size_t>(d.in_h) * d.in_w, out_plane = static_cast<size_t>(d.out_h) * d.out_w;
  const int32_t* q = run.quant + d.quant_offset;
  // out_c channels (the kernel's count; in_c is the same for a well-formed pool), in tasks of
  // whole channels, ~4 per thread per batch but at least kMinElements input bytes each (a global
  // pool of 512 7x7 planes is not 512 tasks).
  constexpr size_t kMinElements = 4096;
  const size_t parts = std::max<size_t>(
      1, std::min<size_t>((4 * run.pool.size() + run.batch - 1) / run.batch, in_plane * d.out_c / kMinElements));
  const Chunks chunks = make_chunks(d.out_c, parts);
  const size_t per_image = chunks.num();
  const auto pool_channels = [&](size_t t) {
    const auto n = static_cast<uint32_t>(t / per_image);
    const size_t i = t % per_image;
    for (size_t c = chunks.begin(i); c < chunks.end(i); ++c) {
      const int8_t* src = run.arena + n * run.image_bytes + d.in_offset + (d.in_channel_base + c) * in_plane;
      int8_t* dst = run.arena + n * run.image_bytes + d.out_offset + (d.out_channel_base + c) * out_plane;
      if (d.pool_kind == abi::kPoolMax) {
        max_pool_plane(run.kernels, src, d.in_h, d.in_w, win, dst, d.out_h, d.out_w);
      } else {
        const RequantParams requant{nullptr, &q[0], &q[1], d.act_lo, d.act_hi};
        average_pool_plane(run.kernels, src, d.in_h, d.in_w, win, dst, d.out_h, d.out_w, requant);
      }
    }
  };
  return run.pool.parallel_for(static_cast<size_t>(run.batch) * per_image, pool_channels, run.deadline);
}

}  // namespace tessera::emu
