// accel_conv_store.h — the store half of a convolution: the epilogue of a finished output tile,
// run concurrently with the MACs of the next tile (the accumulator tile is double-buffered).
//
//   q_read     : bias, multiplier and shift of the tile's channels (three runs of 512-bit beats);
//   st_requant : one conv pixel per cycle: tile_m requantisers turn its accumulators into int8
//                (bias + requantize() + clamp); the fused max-pool is separable (row max in a
//                pool_w shift register, column max over a ring of pool_h line buffers of row
//                maxima; padded positions enter as -128 and never win), so a pooled tile costs
//                its conv pixels, not output pixels x window positions; each output pixel's
//                tile_m results go to the staging tile: lane m, pixel q in bank (q + m) % kBanks
//                (skewed, so one pixel's lanes and one lane's consecutive pixels both sit in
//                distinct banks);
//   st_beats   : (write_conv_tile, the write half, one step later from the other staging tile,
//                concurrently with the next tile's st_requant) each lane's results as 512-bit
//                beats into its channel slice of the output: one
//                run per lane when the tile spans whole output rows (its rows are contiguous in
//                CHW), else one run per row; all lanes and runs one flattened loop.
#pragma once

#include <cstdint>

#include "kernels/accel_conv_geom.h"

namespace tessera {
namespace kernel {

// quant[q .. q + count) (int32) into dst, as beats on the quant port.
static void read_quant(const int32_t* quant, uint32_t q, uint32_t count, int32_t* dst) {
  const uint32_t n_beats = abi::schedule::run_beats(q * 4ull, count * 4);
  const uint32_t per_beat = abi::kBeatBytes / 4;
q_read:
  for (uint32_t k = 0; k < n_beats; ++k) {
#pragma HLS pipeline II = 1
#pragma HLS loop_tripcount min = 1 max = 5 avg = 4
    const uint32_t word = (q / per_beat + k) * per_beat;
    const uint32_t a = word < q ? q : word;
    const uint32_t b = word + per_beat < q + count ? word + per_beat : q + count;
    TESSERA_COUNT_READ_BEAT(kPortQuant, &quant[a], (b - a) * 4);
  q_words:
    for (uint32_t j = 0; j < per_beat; ++j) {
      if (word + j >= a && word + j < b) dst[word + j - q] = quant[word + j];
    }
  }
  TESSERA_COUNT_LOOP(kHalfStore, n_beats, 1, abi::schedule::kQuantReadDepth);
}

// Requantise (and pool) the tile's accumulators into the int8 staging tile, one conv pixel per
// cycle (row-major), all tile_m lanes. The fused max-pool is separable: each lane shifts its
// results along the conv row through a pool_w register window and at each window's last column
// takes the row max, which goes into a line buffer (one line per conv row, pool_h lines in a
// ring); at a window's last row the column max over the pool_h lines' row maxima is the output
// pixel, into the staging tile (lane m, pixel q in bank (q + m) % kBanks). Positions outside the
// conv output enter as -128, so they never win (the max of the valid positions, as before).
static void requant_tile(const ConvStep& s, const abi::LayerDesc& d, const ConvGeom& g,
                         const acc_t out_buf[kOutputBufferElems], const int32_t bias[abi::kMaxTileM],
                         const int32_t mult[abi::kMaxTileM], const int32_t shift[abi::kMaxTileM],
                         act_t stage[kBanks][kStageBankRows]) {
  const uint32_t pixels = s.r_count * s.c_count, conv_pixels = s.conv_rows * s.conv_cols;
  const uint32_t lane_rows = ceil_div(pixels, kBanks);
  act_t window[abi::kMaxTileM][abi::kMaxPoolKernel] = {};  // window[m][j]: conv column cc - j of the row
#pragma HLS array_partition variable = window complete dim = 0
  act_t lines[abi::kMaxPoolKernel][abi::kMaxTileM][abi::kMaxTileC];  // row maxima, ring of conv rows
#pragma HLS array_partition variable = lines complete dim = 1
#pragma HLS array_partition variable = lines complete dim = 2
  uint32_t cr = 0, cc = 0, line = 0;
st_requant:
  for (uint32_t i = 0; i < conv_pixels; ++i) {
#pragma HLS pipeline II = 1
#pragma HLS loop_tripcount min = 1 max = 65536 avg = 1024
#pragma HLS dependence variable = lines type = inter dependent = false
    const bool valid = in_range(s.conv_r0 + static_cast<int32_t>(cr), d.conv_h) &&
                       in_range(s.conv_c0 + static_cast<int32_t>(cc), d.conv_w);
    const bool row_end = cc + 1 >= g.pool_w && (cc + 1 - g.pool_w) % g.pool_sw == 0;
    const bool col_end = cr + 1 >= g.pool_h && (cr + 1 - g.pool_h) % g.pool_sh == 0;
    const uint32_t pc = row_end ? (cc + 1 - g.pool_w) / g.pool_sw : 0;
    const uint32_t q = (col_end ? (cr + 1 - g.pool_h) / g.pool_sh : 0) * s.c_count + pc;
  st_lanes:
    for (uint32_t m = 0; m < abi::kMaxTileM; ++m) {
      if (m < s.m_count) {
        const int32_t v = valid ? abi::requantize(wrap_add(out_buf[i * s.acc_stride + m], bias[m]), mult[m], shift[m],
                                                  d.act_lo, d.act_hi)
                                : kInt8Min;
        for (uint32_t j = abi::kMaxPoolKernel - 1; j > 0; --j) window[m][j] = window[m][j - 1];
        window[m][0] = static_cast<act_t>(v);
        int32_t row_max = kInt8Min;
        for (uint32_t j = 0; j < abi::kMaxPoolKernel; ++j)
          if (j < g.pool_w) row_max = max_i32(row_max, window[m][j]);
        if (row_end) lines[line][m][pc] = static_cast<act_t>(row_max);
        if (row_end && col_end) {  // the window's earlier rows are this tile's, at the same pc
          int32_t best = row_max;
          for (uint32_t y = 1; y < abi::kMaxPoolKernel; ++y)
            if (y < g.pool_h) best = max_i32(best, lines[(line + g.pool_h - y) % g.pool_h][m][pc]);
          stage[(q + m) % kBanks][m * lane_rows + q / kBanks] = static_cast<act_t>(best);
        }
      }
    }
    if (++cc == s.conv_cols) {
      cc = 0;
      ++cr;
      if (++line == g.pool_h) line = 0;
    }
  }
  TESSERA_COUNT_LOOP(kHalfStore, conv_pixels, 1, abi::schedule::kRequantDepth);
}

// The staging tile into the output tensor's channel slice, one beat per cycle. Returns the beats
// (the caller counts them in its half: a conv's write half, a pool's store half).
static uint32_t write_tile(const ConvStep& s, const abi::LayerDesc& d, const ConvGeom& g,
                           const act_t stage[kBanks][kStageBankRows], act_t* image) {
  const uint32_t pixels = s.r_count * s.c_count, lane_rows = ceil_div(pixels, kBanks);
  const uint32_t out_plane = d.out_h * d.out_w;
  const uint32_t runs = g.whole_rows ? 1 : s.r_count, len = g.whole_rows ? pixels : s.c_count;
  uint32_t beats = 0;
st_lanes_out:
  for (uint32_t m = 0; m < s.m_count; ++m) {
#pragma HLS loop_tripcount min = 1 max = 64 avg = 32
    const uint32_t dst_chan = d.out_offset + (d.out_channel_base + s.m0 + m) * out_plane;
  st_runs:
    for (uint32_t r = 0; r < runs; ++r) {
#pragma HLS loop_tripcount min = 1 max = 64 avg = 4
      const uint32_t run = dst_chan + (s.r0 + r) * d.out_w + s.c0, q0 = r * s.c_count;
      const uint32_t n_beats = abi::schedule::run_beats(run, len);
    st_beats:
      for (uint32_t k = 0; k < n_beats; ++k) {
#pragma HLS pipeline II = 1
#pragma HLS loop_tripcount min = 1 max = 65 avg = 4
        const uint32_t word = (run / abi::kBeatBytes + k) * abi::kBeatBytes;
        const uint32_t a = word < run ? run : word;
        const uint32_t b = word + abi::kBeatBytes < run + len ? word + abi::kBeatBytes : run + len;
        TESSERA_COUNT_WRITE_BEAT(kPortArena, &image[a], b - a);
      st_bytes:
        for (uint32_t j = 0; j < kBanks; ++j) {
          const uint32_t byte = word + j;
          if (byte >= a && byte < b) {
            const uint32_t q = q0 + (byte - run);
            image[byte] = stage[(q + m) % kBanks][m * lane_rows + q / kBanks];
          }
        }
      }
      beats += n_beats;
    }
  }
  return beats;
}

// The write half of a conv: a requantised output tile from its staging tile (the other staging
// tile receives the next output tile's requantisation meanwhile).
static void write_conv_tile(const ConvStep& s, const abi::LayerDesc& d, const ConvGeom& g,
                            const act_t stage[kBanks][kStageBankRows], act_t* image) {
#pragma HLS inline off
  const uint32_t beats = write_tile(s, d, g, stage, image);
  TESSERA_COUNT_LOOP(kHalfWrite, beats, 1, abi::schedule::kStoreDepth);
  (void)beats;  // counted only (accel_count.h)
}

// Epilogue of an output tile: quant parameters, requantise + pool into a staging tile (the write
// half writes it out in the next step, write_conv_tile).
static void store_conv_tile(const ConvStep& s, const abi::LayerDesc& d, const ConvGeom& g,
                            const acc_t out_buf[kOutputBufferElems], const int32_t* quant,
                            act_t stage[kBanks][kStageBankRows]) {
#pragma HLS inline off
  int32_t bias[abi::kMaxTileM], mult[abi::kMaxTileM], shift[abi::kMaxTileM];
#pragma HLS array_partition variable = bias complete
#pragma HLS array_partition variable = mult complete
#pragma HLS array_partition variable = shift complete
  // quant layout per conv layer: bias[out_c], multiplier[out_c], shift[out_c] at quant_offset.
  const uint32_t q = d.quant_offset + s.m0;
  read_quant(quant, q, s.m_count, bias);
  read_quant(quant, q + d.out_c, s.m_count, mult);
  read_quant(quant, q + 2 * d.out_c, s.m_count, shift);
  requant_tile(s, d, g, out_buf, bias, mult, shift, stage);
}

}  // namespace kernel
}  // namespace tessera
