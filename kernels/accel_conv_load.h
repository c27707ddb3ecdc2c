// accel_conv_load.h — the load half of a convolution step: the input tile and the weight tile from
// DDR into one half of the ping-pong buffers, one 512-bit beat (64 bytes) per cycle.
//
// Both tiles arrive in DDR order and land in kBanks single-byte banks, so a beat's 64 bytes go to
// 64 distinct banks in one cycle (a rotation by the beat's misalignment):
//  - input (CHW in DDR): each tile channel is one run (whole rows: the channel's valid rows are
//    contiguous) or one run per valid row (a column tile, or rows at a padded pitch when the
//    kernel window is folded, LayerDesc.fold_rows); the channel's pixels are stored
//    channel-major, pixel q of channel ch in bank (q + ch * skew) % kBanks, row ch * ch_rows +
//    q / kBanks. The skew puts one pixel's channels (or, folded, its (channel, kx) pairs) in
//    distinct banks for the MAC array's gather. Padding is not stored: compute masks it.
//  - weights ([out_c][in_c/groups][kh][kw] in DDR): each lane's n x taps weights are one run,
//    stored lane-major in DDR order, element f of lane m in bank f % kBanks, row m * w_rows + f /
//    kBanks; the staging in compute reads a tap's elements out of it.
// The beats of all runs of all tile channels (input: one loop over counters) or of all lanes
// (weights: HLS `loop_flatten` of the lane x beat nest) are one pipelined loop, so the AXI read
// latency is paid once per tile, not once per channel or row. A beat still holds one channel's bytes only (runs are cut
// at channel ends), so its rotation into the banks stays conflict-free.
#pragma once

#include <cstdint>

#include "kernels/accel_conv_geom.h"

namespace tessera {
namespace kernel {

// Rows of the weight buffer one lane takes.
inline uint32_t weight_lane_rows(const ConvStep& s, const ConvGeom& g) { return ceil_div(s.n_count * g.taps, kBanks); }

// The valid (in-tensor) part of a tile channel: rows [y_lo, y_hi), columns [x_lo, x_hi).
struct InWindow {
  int32_t y_lo, y_hi, x_lo, x_hi;
};

inline InWindow input_window(const ConvStep& s, const abi::LayerDesc& d, const ConvGeom& g) {
  InWindow w;
  const int32_t h = static_cast<int32_t>(d.in_h), wd = static_cast<int32_t>(d.in_w);
  w.y_lo = s.in_r0 < 0 ? 0 : s.in_r0;
  w.y_hi = s.in_r0 + static_cast<int32_t>(s.in_rows);
  if (w.y_hi > h) w.y_hi = h;
  w.x_lo = g.whole_rows || s.in_c0 < 0 ? 0 : s.in_c0;
  w.x_hi = g.whole_rows ? wd : s.in_c0 + static_cast<int32_t>(s.in_cols);
  if (w.x_hi > wd) w.x_hi = wd;
  return w;
}

// One beat of a run: bytes [a, b) of the image (a..b inside one aligned 64-byte word) go to buffer
// pixels q0 + (a - run) .. of channel ch. In HLS the 64 bytes are one word of the widened port
// and the writes one rotated bank write; in C simulation only the run's bytes are touched.
static void input_beat(const act_t* image, uint32_t run, uint32_t a, uint32_t b, uint32_t q0, uint32_t ch,
                       const ConvStep& s, const ConvGeom& g, act_t in_buf[kBanks][kInBankRows]) {
  TESSERA_COUNT_READ_BEAT(kPortArena, &image[a], b - a);
in_bytes:
  for (uint32_t j = 0; j < kBanks; ++j) {
    const uint32_t byte = (a / abi::kBeatBytes) * abi::kBeatBytes + j;
    if (byte >= a && byte < b) {
      const uint32_t q = q0 + (byte - run);
      in_buf[(q + ch * g.skew) % kBanks][ch * s.ch_rows + q / kBanks] = image[byte];
    }
  }
}

// DDR -> input tile: every tile channel's runs (one per valid row, or one for whole rows), all
// channels one pipelined loop of beats: the (channel, run, beat) position is a set of counters the
// loop advances, so the next run's first read issues right after the previous run's last one and
// the AXI read latency is paid once per tile.
static void load_input_tile(const ConvStep& s, const abi::LayerDesc& d, const ConvGeom& g, const act_t* image,
                            act_t in_buf[kBanks][kInBankRows]) {
#pragma HLS inline off
  const InWindow w = input_window(s, d, g);
  if (w.y_hi <= w.y_lo || w.x_hi <= w.x_lo) return;  // the tile lies in the padding
  const uint32_t rows = static_cast<uint32_t>(w.y_hi - w.y_lo);
  // Whole rows are one run per channel, unless the window fold pads the buffer's row pitch.
  const bool one_run = g.whole_rows && !g.fold_rows;
  const uint32_t run_rows = one_run ? 1 : rows;
  const uint32_t run_len = one_run ? rows * d.in_w : static_cast<uint32_t>(w.x_hi - w.x_lo);
  // Position: tile channel ch (group gl, channel n within it), run r, beat k of the run.
  uint32_t ch = 0, gl = 0, n = 0, r = 0, k = 0, beats = 0;
in_beats:
  while (ch < s.ch_count) {
#pragma HLS pipeline II = 1
#pragma HLS loop_tripcount min = 1 max = 65536 avg = 256
    const uint32_t chan = d.in_channel_base + (s.group0 + gl) * g.in_per_group + s.k0 + n;
    const uint32_t y = static_cast<uint32_t>(w.y_lo) + r;
    const uint32_t run = d.in_offset + chan * d.in_h * d.in_w + y * d.in_w + static_cast<uint32_t>(w.x_lo);
    // Buffer pixel of the run's first byte: window row y - in_r0, column x_lo - in_c0 - col0.
    const uint32_t q0 = static_cast<uint32_t>((static_cast<int32_t>(y) - s.in_r0) * static_cast<int32_t>(s.pitch) +
                                              w.x_lo - s.in_c0 - s.col0);
    const uint32_t n_beats = abi::schedule::run_beats(run, run_len);
    const uint32_t word = (run / abi::kBeatBytes + k) * abi::kBeatBytes;
    const uint32_t a = word < run ? run : word;
    const uint32_t b = word + abi::kBeatBytes < run + run_len ? word + abi::kBeatBytes : run + run_len;
    input_beat(image, run, a, b, q0, ch, s, g, in_buf);
    ++beats;
    if (++k < n_beats) continue;
    k = 0;
    if (++r < run_rows) continue;
    r = 0;
    ++ch;
    if (++n == s.n_count) {
      n = 0;
      ++gl;
    }
  }
  TESSERA_COUNT_LOOP(kHalfLoad, beats, 1, abi::schedule::kLoadDepth);
  (void)beats;  // counted only (accel_count.h)
}

// DDR -> weight tile: every lane's run of n x taps weights, all lanes one flattened loop of beats.
static void load_weight_tile(const ConvStep& s, const abi::LayerDesc& d, const ConvGeom& g, const weight_t* weights,
                             weight_t w_buf[kBanks][kWBankRows]) {
#pragma HLS inline off
  const uint32_t len = s.n_count * g.taps, lane_rows = weight_lane_rows(s, g);
  uint32_t beats = 0;
w_lanes:
  for (uint32_t m = 0; m < s.m_count; ++m) {
#pragma HLS loop_tripcount min = 1 max = 64 avg = 32
    const uint32_t run = d.weight_offset + ((s.m0 + m) * g.in_per_group + s.k0) * g.taps;
    const uint32_t n_beats = abi::schedule::run_beats(run, len);
  w_beats:
    for (uint32_t k = 0; k < n_beats; ++k) {
#pragma HLS pipeline II = 1
#pragma HLS loop_tripcount min = 1 max = 65 avg = 3
      const uint32_t word = (run / abi::kBeatBytes + k) * abi::kBeatBytes;
      const uint32_t a = word < run ? run : word;
      const uint32_t b = word + abi::kBeatBytes < run + len ? word + abi::kBeatBytes : run + len;
      TESSERA_COUNT_READ_BEAT(kPortWeights, &weights[a], b - a);
    w_bytes:
      for (uint32_t j = 0; j < kBanks; ++j) {
        const uint32_t byte = word + j;
        if (byte >= a && byte < b) {
          const uint32_t f = byte - run;
          w_buf[f % kBanks][m * lane_rows + f / kBanks] = weights[byte];
        }
      }
    }
    beats += n_beats;
  }
  TESSERA_COUNT_LOOP(kHalfLoad, beats, 1, abi::schedule::kLoadDepth);
  (void)beats;  // counted only (accel_count.h)
}

// The load half of a step: the next step's tiles, into the buffers compute is not using; the
// input tile only when the next step does not share the current one (input stationary).
static void load_conv_tile(const ConvStep& s, const abi::LayerDesc& d, const ConvGeom& g, const act_t* image,
                           const weight_t* weights, bool new_input, act_t in_buf[kBanks][kInBankRows],
                           weight_t w_buf[kBanks][kWBankRows]) {
#pragma HLS inline off
  if (new_input) load_input_tile(s, d, g, image, in_buf);
  load_weight_tile(s, d, g, weights, w_buf);
}

}  // namespace kernel
}  // namespace tessera
