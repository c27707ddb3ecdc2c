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
// Schedule: the conv engine's tiles and buffers, 64 channels wide. A pool is a depthwise window
// op, so the layer is tiled like a depthwise conv with the pool window as kernel (pool_view):
// tile_m channels x tile_r x tile_c output pixels. Per tile, the conv load half brings the
// channels' input window in 512-bit beats into the banked input tile (accel_conv_load.h); the pool
// loop takes one (output pixel, window position) per cycle, all tile_m channels of that input
// pixel at once (one pixel's channels sit in distinct banks), into tile_m running max / sum
// registers; at the window's last position a max goes to the staging tile, a sum to the
// accumulator tile, which the conv store half's requant_tile (the same requantisers: one shared
// instance) turns into int8 in the staging tile; write_tile (accel_conv_store.h) writes it back in
// 512-bit beats. The next tile's load
// runs beside the current tile's pool loop and write (ping-pong input tiles).
#pragma once

#include <cstdint>

#include "kernels/accel_common.h"
#include "kernels/accel_conv_load.h"
#include "kernels/accel_conv_store.h"

namespace tessera {
namespace kernel {

// The pool as a depthwise conv (kernel = window, one channel per group, no fused pool): the
// descriptor the conv engine's tiling, load and write use. Never checked by layer_fits: a pool
// window may exceed kMaxKernel (abi::layer_fits checks the pool's own rule).
inline abi::LayerDesc pool_view(const abi::LayerDesc& d) {
  abi::LayerDesc v = d;
  v.kernel_h = d.pool_h;
  v.kernel_w = d.pool_w;
  v.stride_h = d.pool_stride_h;
  v.stride_w = d.pool_stride_w;
  v.pad_top = d.pool_pad_top;
  v.pad_left = d.pool_pad_left;
  v.dilation_h = v.dilation_w = 1;
  v.in_c = d.out_c;
  v.groups = d.out_c;
  v.tile_n = 1;
  v.conv_h = d.out_h;
  v.conv_w = d.out_w;
  v.pool_kind = abi::kPoolNone;
  return v;
}

// The pool loop of one tile: max or sum over each window's valid positions, tile_m channels per
// cycle, results (requantised for average) into the staging tile.
static void pool_tile(const ConvStep& s, const abi::LayerDesc& v, bool average, const act_t in_buf[kBanks][kInBankRows],
                      acc_t sums[kOutputBufferElems], act_t stage[kBanks][kStageBankRows]) {
#pragma HLS inline off
  const uint32_t pixels = s.r_count * s.c_count, window = v.kernel_h * v.kernel_w;
  const uint32_t lane_rows = ceil_div(pixels, kBanks);
  int32_t acc[abi::kMaxTileM];
#pragma HLS array_partition variable = acc complete
  uint32_t q = 0, pr = 0, pc = 0, wy = 0, wx = 0;
pool_pixels:
  for (uint32_t i = 0; i < pixels * window; ++i) {
#pragma HLS pipeline II = 1
#pragma HLS loop_tripcount min = 1 max = 65536 avg = 1024
    const uint32_t row = pr * v.stride_h + wy, col = pc * v.stride_w + wx;
    const bool valid =
        in_range(s.in_r0 + static_cast<int32_t>(row), v.in_h) && in_range(s.in_c0 + static_cast<int32_t>(col), v.in_w);
    const uint32_t p = static_cast<uint32_t>(static_cast<int32_t>(row * s.pitch + col) - s.col0);
    const bool first = wy == 0 && wx == 0, last = wy + 1 == v.kernel_h && wx + 1 == v.kernel_w;
  pool_lanes:
    for (uint32_t m = 0; m < abi::kMaxTileM; ++m) {
      if (m < s.m_count) {
        const int32_t prev = first ? (average ? 0 : kInt8Min) : acc[m];
        const int32_t x = valid ? static_cast<int32_t>(in_buf[(p + m) % kBanks][m * s.ch_rows + p / kBanks]) : 0;
        acc[m] = !valid ? prev : (average ? prev + x : max_i32(prev, x));
        if (last && average) sums[q * s.acc_stride + m] = acc[m];
        if (last && !average) stage[(q + m) % kBanks][m * lane_rows + q / kBanks] = static_cast<act_t>(acc[m]);
      }
    }
    if (++wx == v.kernel_w) {
      wx = 0;
      if (++wy == v.kernel_h) {
        wy = 0;
        ++q;
        if (++pc == s.c_count) {
          pc = 0;
          ++pr;
        }
      }
    }
  }
  TESSERA_COUNT_LOOP(kHalfCompute, pixels * window, 1, abi::schedule::kPoolDepth);
}

// One pool layer for one image, on the conv engine's input tiles, accumulator and staging tiles.
static void pool_layer(const abi::LayerDesc& d, const int32_t* quant, act_t* image,
                       act_t in_buf[2][kBanks][kInBankRows], acc_t sums[kOutputBufferElems],
                       act_t stage[kBanks][kStageBankRows]) {
  const bool average = d.pool_kind == abi::kPoolAverage;
  // {M, S} of an average pool, the same for every lane; no bias.
  int32_t q[2] = {0, 0}, bias[abi::kMaxTileM], mult[abi::kMaxTileM], shift[abi::kMaxTileM];
  if (average) read_quant(quant, d.quant_offset, 2, q);
pool_quant:
  for (uint32_t m = 0; m < abi::kMaxTileM; ++m) {
#pragma HLS unroll
    bias[m] = 0;
    mult[m] = q[0];
    shift[m] = q[1];
  }
  const abi::LayerDesc v = pool_view(d);
  const ConvGeom g = make_conv_geom(v);
  ConvCursor cursor = {0, 0, 0, 0};
  ConvStep cur = make_conv_step(v, g, cursor);
  load_input_tile(cur, v, g, image, in_buf[0]);  // prologue
  uint32_t half = 0;
pool_tiles:
  for (uint32_t step = 0; step < g.steps; ++step) {
#pragma HLS loop_tripcount min = 1 max = 4096 avg = 16
    const bool has_next = step + 1 < g.steps;
    advance(cursor, g);
    const ConvStep next = has_next ? make_conv_step(v, g, cursor) : cur;
    TESSERA_COUNT_STEP();
    if (has_next) load_input_tile(next, v, g, image, in_buf[half ^ 1]);
    pool_tile(cur, v, average, in_buf[half], sums, stage);
    if (average) requant_tile(cur, v, g, sums, bias, mult, shift, stage);
    const uint32_t beats = write_tile(cur, v, g, stage, image);
    TESSERA_COUNT_LOOP(kHalfStore, beats, 1, abi::schedule::kStoreDepth);
    (void)beats;  // counted only (accel_count.h)
    half ^= 1;
    cur = next;
  }
}

}  // namespace kernel
}  // namespace tessera
