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
// Schedule: per channel and output row, tile_c-wide strips; each window row is read from DDR as
// one run of c_count x pool_w bytes (overlapping windows re-read a few bytes; strides of large
// global pools read each input byte once). Accumulators stay on chip, one per output column, so
// the window size (up to kMaxStandalonePool^2) and pool stride need no input buffer at all.
#pragma once

#include <stdint.h>

#include "kernels/accel_common.h"

namespace tessera {
namespace kernel {

static void pool_layer(const abi::LayerDesc& d, const int32_t* quant, act_t* image) {
  const bool average = d.pool_kind == abi::kPoolAverage;
  const int32_t mult = average ? quant[d.quant_offset] : 0;
  const int32_t shift = average ? quant[d.quant_offset + 1] : 0;
  const uint32_t in_plane = d.in_h * d.in_w;
  const uint32_t out_plane = d.out_h * d.out_w;
  int32_t acc[abi::kMaxTileC];
pool_chans:
  for (uint32_t c = 0; c < d.out_c; ++c) {
#pragma HLS loop_tripcount min = 1 max = 1024 avg = 64
    const uint32_t src_chan = d.in_offset + (d.in_channel_base + c) * in_plane;
    const uint32_t dst_chan = d.out_offset + (d.out_channel_base + c) * out_plane;
  pool_rows:
    for (uint32_t r = 0; r < d.out_h; ++r) {
#pragma HLS loop_tripcount min = 1 max = 256 avg = 14
    pool_strips:
      for (uint32_t c0 = 0; c0 < d.out_w; c0 += d.tile_c) {
#pragma HLS loop_tripcount min = 1 max = 8 avg = 1
        const uint32_t c_count = min_u32(d.tile_c, d.out_w - c0);
      pool_init:
        for (uint32_t j = 0; j < c_count; ++j) {
#pragma HLS pipeline II = 1
#pragma HLS loop_tripcount min = 1 max = 64 avg = 14
          acc[j] = average ? 0 : kInt8Min;
        }
      pool_wy:
        for (uint32_t wy = 0; wy < d.pool_h; ++wy) {
#pragma HLS loop_tripcount min = 1 max = 16 avg = 3
          const int32_t iy = static_cast<int32_t>(r * d.pool_stride_h + wy) - static_cast<int32_t>(d.pool_pad_top);
          if (!in_range(iy, d.in_h)) continue;
          const uint32_t src_row = src_chan + static_cast<uint32_t>(iy) * d.in_w;
          // Window row of every output column of the strip; `run` carries one column's value so
          // the loop has no memory recurrence (acc[j] is read at wx == 0, written at the last wx).
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
              const int32_t v = image[src_row + static_cast<uint32_t>(ix)];
              run = average ? run + v : max_i32(run, v);
            }
            if (++wx == d.pool_w) {
              acc[j] = run;
              wx = 0;
              ++j;
            }
          }
        }
        const uint32_t dst_row = dst_chan + r * d.out_w + c0;
      pool_store:
        for (uint32_t j = 0; j < c_count; ++j) {
#pragma HLS pipeline II = 1
#pragma HLS loop_tripcount min = 1 max = 64 avg = 14
          const int32_t y = average ? abi::requantize(acc[j], mult, shift, d.act_lo, d.act_hi) : acc[j];
          image[dst_row + j] = static_cast<act_t>(y);
        }
      }
    }
  }
}

}  // namespace kernel
}  // namespace tessera
