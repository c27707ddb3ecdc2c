// accel_pool.h — standalone pooling (kOpPool) on int8 tensors.
//
//   max:     y = max over the window's valid positions, starting from -128 (padded positions never
//            win; a window with no valid position gives -128). No requantisation, no clamp.
//   average: y = requantize(sum over the window's valid positions, M, S, act_lo, act_hi), with
//            {M, S} at quant_offset. Padded positions add nothing. The divisor lives in M/2^S, so
//            the compiler (accel/plan) only emits average pools whose window count is constant:
//            no padding, or count_include_pad semantics (padding counts as zeros in a fixed
//            pool_h x pool_w window), and no partial ceil-mode windows. Anything else stays on the
//            ARM host.
//
// Schedule: per channel and output row, tile_c-wide strips of output columns. The input a strip's
// windows need goes into an on-chip line buffer by sequential reads, one DMA run each:
//   - when the strip spans the whole output row, the window's valid input rows are read whole
//     (all in_w columns, a superset of those the windows touch). Whole rows are contiguous in
//     CHW, so all of them are ONE run of rows x in_w bytes when that fits the line buffer (a
//     global pool: the whole plane; a 3x3/2 pool over a 112-wide row: 3 x 112 bytes);
//   - otherwise each valid window row is one run over the strip's input columns, which fit the
//     line buffer by abi::layer_fits ((tile_c - 1) x pool_stride_w + pool_w <= kPoolLineBytes).
// Accumulators stay on chip, one per output column. Results collect in an output buffer written
// back as one run when the next strip does not continue it in DDR or it would overflow; strips
// come in raster order of a contiguous channel slice, so that is one run per kPoolLineBytes.
#pragma once

#include <cstdint>

#include "kernels/accel_common.h"

namespace tessera {
namespace kernel {

// A window bound (input row or column, may be negative in the padding) clipped to [0, bound].
inline uint32_t clip_to(int32_t v, uint32_t bound) {
  return v < 0 ? 0u : (static_cast<uint32_t>(v) > bound ? bound : static_cast<uint32_t>(v));
}

// One DMA run: count bytes from DDR into the line buffer.
static void pool_read_run(const act_t* src, uint32_t count, act_t line[kPoolLineElems]) {
pool_read:
  for (uint32_t i = 0; i < count; ++i) {
#pragma HLS pipeline II = 1
#pragma HLS loop_tripcount min = 1 max = 4096 avg = 336
    line[i] = src[i];
  }
}

// One DMA run: the output buffer's count bytes back to DDR.
static void pool_write_run(const act_t out_line[kPoolLineElems], uint32_t count, act_t* dst) {
pool_write:
  for (uint32_t i = 0; i < count; ++i) {
#pragma HLS pipeline II = 1
#pragma HLS loop_tripcount min = 1 max = 4096 avg = 2048
    dst[i] = out_line[i];
  }
}

// The windows of one strip, output columns [c0, c0 + c_count) of an output row whose valid input
// rows are [y0, y1), of the channel at src_chan: max (or sum when `average`) of each window's
// valid positions into acc[0, c_count). Inlined: the loops nest in pool_layer's as before.
static void pool_strip(const abi::LayerDesc& d, bool average, const act_t* image, uint32_t src_chan, uint32_t y0,
                       uint32_t y1, uint32_t c0, uint32_t c_count, int32_t acc[abi::kMaxTileC],
                       act_t line[kPoolLineElems]) {
#pragma HLS inline
  // Input columns [x0, x1) the strip's windows touch.
  const int32_t wx0 = static_cast<int32_t>(c0 * d.pool_stride_w) - static_cast<int32_t>(d.pool_pad_left);
  const uint32_t x0 = clip_to(wx0, d.in_w);
  const uint32_t x1 = clip_to(wx0 + static_cast<int32_t>((c_count - 1) * d.pool_stride_w + d.pool_w), d.in_w);
  // Whole rows, all window rows in one run, when the strip spans the output row and they fit.
  const bool merged = c_count == d.out_w && y1 > y0 && (y1 - y0) * d.in_w <= kPoolLineElems;
  const uint32_t xs = merged ? 0 : x0;
  const uint32_t row_len = merged ? d.in_w : x1 - x0;
  const uint32_t run_rows = merged ? y1 - y0 : 1;
  const uint32_t y_end = row_len > 0 ? y1 : y0;  // a strip wholly in the padding reads nothing
pool_init:
  for (uint32_t j = 0; j < c_count; ++j) {
#pragma HLS pipeline II = 1
#pragma HLS loop_tripcount min = 1 max = 64 avg = 14
    acc[j] = average ? 0 : kInt8Min;
  }
pool_runs:
  for (uint32_t y = y0; y < y_end; y += run_rows) {
#pragma HLS loop_tripcount min = 1 max = 16 avg = 1
    pool_read_run(image + src_chan + y * d.in_w + xs, run_rows * row_len, line);
  pool_wy:
    for (uint32_t k = 0; k < run_rows; ++k) {
#pragma HLS loop_tripcount min = 1 max = 16 avg = 3
      // Window row of every output column of the strip; `run` carries one column's value so
      // the loop has no memory recurrence (acc[j] is read at wx == 0, written at the last wx).
      const uint32_t line_row = k * row_len;
      uint32_t j = 0, wx = 0;
      int32_t run = 0;
    pool_wx:
      for (uint32_t i = 0; i < c_count * d.pool_w; ++i) {
#pragma HLS pipeline II = 1
#pragma HLS loop_tripcount min = 1 max = 1024 avg = 42
        if (wx == 0) run = acc[j];
        const int32_t ix =
            static_cast<int32_t>((c0 + j) * d.pool_stride_w + wx) - static_cast<int32_t>(d.pool_pad_left);
        if (in_range(ix, d.in_w)) {
          const int32_t v = line[line_row + static_cast<uint32_t>(ix) - xs];
          run = average ? run + v : max_i32(run, v);
        }
        if (++wx == d.pool_w) {
          acc[j] = run;
          wx = 0;
          ++j;
        }
      }
    }
  }
}

static void pool_layer(const abi::LayerDesc& d, const int32_t* quant, act_t* image) {
  const bool average = d.pool_kind == abi::kPoolAverage;
  const int32_t mult = average ? quant[d.quant_offset] : 0;
  const int32_t shift = average ? quant[d.quant_offset + 1] : 0;
  const uint32_t in_plane = d.in_h * d.in_w;
  const uint32_t out_plane = d.out_h * d.out_w;
  int32_t acc[abi::kMaxTileC];
  act_t line[kPoolLineElems];
  act_t out_line[kPoolLineElems];
  uint32_t pending = 0, pending_dst = 0;  // results in out_line, and where they go
pool_chans:
  for (uint32_t c = 0; c < d.out_c; ++c) {
#pragma HLS loop_tripcount min = 1 max = 1024 avg = 64
    const uint32_t src_chan = d.in_offset + (d.in_channel_base + c) * in_plane;
    const uint32_t dst_chan = d.out_offset + (d.out_channel_base + c) * out_plane;
  pool_rows:
    for (uint32_t r = 0; r < d.out_h; ++r) {
#pragma HLS loop_tripcount min = 1 max = 256 avg = 14
      // The window's valid input rows [y0, y1).
      const int32_t wy0 = static_cast<int32_t>(r * d.pool_stride_h) - static_cast<int32_t>(d.pool_pad_top);
      const uint32_t y0 = clip_to(wy0, d.in_h);
      const uint32_t y1 = clip_to(wy0 + static_cast<int32_t>(d.pool_h), d.in_h);
    pool_strips:
      for (uint32_t c0 = 0; c0 < d.out_w; c0 += d.tile_c) {
#pragma HLS loop_tripcount min = 1 max = 8 avg = 1
        const uint32_t c_count = min_u32(d.tile_c, d.out_w - c0);
        pool_strip(d, average, image, src_chan, y0, y1, c0, c_count, acc, line);
        // Results go to out_line; it is written back first when this strip does not continue it.
        const uint32_t dst = dst_chan + r * d.out_w + c0;
        if (pending > 0 && (pending_dst + pending != dst || pending + c_count > kPoolLineElems)) {
          pool_write_run(out_line, pending, image + pending_dst);
          pending = 0;
        }
        if (pending == 0) pending_dst = dst;
      pool_store:
        for (uint32_t j = 0; j < c_count; ++j) {
#pragma HLS pipeline II = 1
#pragma HLS loop_tripcount min = 1 max = 64 avg = 14
          const int32_t y = average ? abi::requantize(acc[j], mult, shift, d.act_lo, d.act_hi) : acc[j];
          out_line[pending + j] = static_cast<act_t>(y);
        }
        pending += c_count;
      }
    }
  }
  if (pending > 0) pool_write_run(out_line, pending, image + pending_dst);
}

}  // namespace kernel
}  // namespace tessera
