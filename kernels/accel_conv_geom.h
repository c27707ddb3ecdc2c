// accel_conv_geom.h — the tiled schedule of a convolution: per-layer constants (ConvGeom), the
// (m, r, c, k) step loop (ConvCursor) and everything one step's load, compute and store need to
// know (ConvStep). Only accel_conv.h includes it.
#pragma once

#include <cstdint>

#include "kernels/accel_common.h"

namespace tessera {
namespace kernel {

// Per-layer constants of a convolution's tiled schedule.
struct ConvGeom {
  uint32_t out_per_group, in_per_group;
  uint32_t taps;  // kernel_h * kernel_w
  // Fused max-pool window in conv-output coordinates; 1x1, stride 1, no padding when none.
  bool pooled;
  uint32_t pool_h, pool_w, pool_sh, pool_sw, pool_pt, pool_pl;
  // Tile counts along output channels, final rows, final columns and input channels per group.
  uint32_t m_tiles, r_tiles, c_tiles, k_tiles;
  uint32_t steps;
  // Input tile rows are whole tensor rows (one column tile spans the output).
  bool whole_rows;
  // Few-channel mapping (abi::schedule::folds_kernel_width): the kernel width folded into the MAC
  // vector; tap rows the compute loop runs (kernel_h when folded, else kernel_h x kernel_w); the
  // input buffer's bank skew per channel (kernel_w when folded, so a pixel's (channel, kx) pairs
  // sit in distinct banks; 1 otherwise: a pixel's channels sit in distinct banks).
  bool fold;
  uint32_t tap_rows, skew;
  // Window fold (LayerDesc.fold_rows): the whole kernel window folded into the vector, (channel,
  // ky, kx) triples, one tap unit; input rows at the padded pitch abi::schedule::input_pitch.
  // per_channel: vector elements per channel (1, kernel_w or kernel_h x kernel_w).
  bool fold_rows;
  uint32_t per_channel;
  // Weight staging passes per lane for a full channel slice and for the last (shorter) one.
  uint32_t passes_full, passes_last;
  // Input stationary (abi::kLoopInputStationary): steps run (r, c, m) and the steps of one
  // spatial position share its input tile, loaded once.
  bool input_stationary;
  // Depthwise mapping (abi::schedule::depthwise_lanes): lane m is tile channel m.
  bool depthwise;
};

inline ConvGeom make_conv_geom(const abi::LayerDesc& d) {
  ConvGeom g;
  g.out_per_group = d.out_c / d.groups;
  g.in_per_group = d.in_c / d.groups;
  g.taps = d.kernel_h * d.kernel_w;
  g.pooled = d.pool_kind == abi::kPoolMax;
  g.pool_h = g.pooled ? d.pool_h : 1;
  g.pool_w = g.pooled ? d.pool_w : 1;
  g.pool_sh = g.pooled ? d.pool_stride_h : 1;
  g.pool_sw = g.pooled ? d.pool_stride_w : 1;
  g.pool_pt = g.pooled ? d.pool_pad_top : 0;
  g.pool_pl = g.pooled ? d.pool_pad_left : 0;
  g.m_tiles = ceil_div(d.out_c, d.tile_m);
  g.r_tiles = ceil_div(d.out_h, d.tile_r);
  g.c_tiles = ceil_div(d.out_w, d.tile_c);
  g.k_tiles = ceil_div(g.in_per_group, d.tile_n);
  g.steps = g.m_tiles * g.r_tiles * g.c_tiles * g.k_tiles;
  g.whole_rows = g.c_tiles == 1;
  g.fold_rows = d.fold_rows == 1;
  g.fold = !g.fold_rows && abi::schedule::folds_kernel_width(d.groups, d.tile_n, d.kernel_w, d.dilation_w);
  g.per_channel = abi::schedule::vector_per_channel(g.fold_rows, g.fold, d.kernel_h, d.kernel_w);
  g.tap_rows = g.fold_rows ? 1 : (g.fold ? d.kernel_h : g.taps);
  g.skew = g.per_channel;
  const uint32_t n_last = g.in_per_group - (g.k_tiles - 1) * d.tile_n;
  // A staging pass reads at most one vector group (kMaxVector channels) of a lane.
  g.passes_full = abi::schedule::stage_passes(
      g.per_channel, min_u32(min_u32(d.tile_n, g.in_per_group), abi::kMaxVector), d.kernel_h, d.kernel_w);
  g.passes_last = abi::schedule::stage_passes(g.per_channel, min_u32(n_last, abi::kMaxVector), d.kernel_h, d.kernel_w);
  g.input_stationary = d.loop_order == abi::kLoopInputStationary;
  g.depthwise = abi::schedule::depthwise_lanes(d.in_c, d.out_c, d.groups, d.dilation_w);
  return g;
}

// Position of one step in the tile loop: (m, r, c, k), k fastest, or input stationary (r, c, m)
// with a single k tile.
struct ConvCursor {
  uint32_t mt, rt, ct, kt;
};

inline void advance(ConvCursor& cur, const ConvGeom& g) {
  if (g.input_stationary) {
    if (++cur.mt < g.m_tiles) return;
    cur.mt = 0;
    if (++cur.ct < g.c_tiles) return;
    cur.ct = 0;
    ++cur.rt;
    return;
  }
  if (++cur.kt < g.k_tiles) return;
  cur.kt = 0;
  if (++cur.ct < g.c_tiles) return;
  cur.ct = 0;
  if (++cur.rt < g.r_tiles) return;
  cur.rt = 0;
  ++cur.mt;
}

// Everything load, compute and store need to know about one step. Rows/cols of the conv output
// and of the input may start at negative coordinates (pool padding, conv padding).
struct ConvStep {
  uint32_t m0, m_count;     // output channels [m0, m0 + m_count)
  uint32_t r0, r_count;     // final output rows
  uint32_t c0, c_count;     // final output columns
  uint32_t k0, n_count;     // input channels [k0, k0 + n_count) within each group
  uint32_t group0, groups;  // first group of the tile and how many groups it spans
  uint32_t ch_count;        // groups * n_count: channels held in the input tile
  int32_t conv_r0, conv_c0;
  uint32_t conv_rows, conv_cols;
  int32_t in_r0, in_c0;
  uint32_t in_rows, in_cols;
  // Input buffer: pixel (row, col) of the tile window is buffer pixel row * pitch + col - col0
  // (pitch = in_w and col0 = -in_c0 for whole rows, else in_cols and 0; both padded when the
  // window is folded); each channel takes ch_rows bank rows.
  uint32_t pitch;
  int32_t col0;
  uint32_t ch_rows;
  // MAC vector: total elements per tap (channels, or channel x kx pairs folded), split into
  // vgroups groups of at most kMaxVector (the last one vec_last long); staging passes.
  uint32_t vec_len, vgroups, vec_last, passes;
  bool first_k, last_k;
  // Pixel spreading (abi::schedule::spreads_pixels) and the accumulator tile's pixel stride
  // (out_buf[p * acc_stride + m]: m_count, or odd when spread).
  bool spread;
  uint32_t acc_stride;
};

inline ConvStep make_conv_step(const abi::LayerDesc& d, const ConvGeom& g, const ConvCursor& cur) {
  ConvStep s;
  s.m0 = cur.mt * d.tile_m;
  s.m_count = min_u32(d.tile_m, d.out_c - s.m0);
  s.r0 = cur.rt * d.tile_r;
  s.r_count = min_u32(d.tile_r, d.out_h - s.r0);
  s.c0 = cur.ct * d.tile_c;
  s.c_count = min_u32(d.tile_c, d.out_w - s.c0);
  s.k0 = cur.kt * d.tile_n;
  s.n_count = min_u32(d.tile_n, g.in_per_group - s.k0);
  // layer_fits: a channel tile covers whole groups (tile_m a multiple of out_per_group) or lies
  // inside one group (out_per_group a multiple of tile_m).
  s.group0 = s.m0 / g.out_per_group;
  s.groups = d.tile_m >= g.out_per_group ? s.m_count / g.out_per_group : 1;
  s.ch_count = s.groups * s.n_count;
  s.conv_r0 = static_cast<int32_t>(s.r0 * g.pool_sh) - static_cast<int32_t>(g.pool_pt);
  s.conv_c0 = static_cast<int32_t>(s.c0 * g.pool_sw) - static_cast<int32_t>(g.pool_pl);
  s.conv_rows = (s.r_count - 1) * g.pool_sh + g.pool_h;
  s.conv_cols = (s.c_count - 1) * g.pool_sw + g.pool_w;
  s.in_r0 = s.conv_r0 * static_cast<int32_t>(d.stride_h) - static_cast<int32_t>(d.pad_top);
  s.in_c0 = s.conv_c0 * static_cast<int32_t>(d.stride_w) - static_cast<int32_t>(d.pad_left);
  s.in_rows = (s.conv_rows - 1) * d.stride_h + (d.kernel_h - 1) * d.dilation_h + 1;
  s.in_cols = (s.conv_cols - 1) * d.stride_w + (d.kernel_w - 1) * d.dilation_w + 1;
  s.pitch = abi::schedule::input_pitch(g.whole_rows ? d.in_w : s.in_cols, g.fold_rows, d.kernel_w);
  s.col0 = g.whole_rows ? -s.in_c0 : 0;
  s.ch_rows = ceil_div(s.in_rows * s.pitch, kBanks);
  s.vec_len = abi::schedule::vector_length(g.per_channel, g.per_channel > 1 ? s.n_count : s.ch_count);
  s.vgroups = ceil_div(s.vec_len, abi::kMaxVector);
  s.vec_last = s.vec_len - (s.vgroups - 1) * abi::kMaxVector;
  s.first_k = cur.kt == 0;
  s.last_k = cur.kt + 1 == g.k_tiles;
  s.passes = s.last_k ? g.passes_last : g.passes_full;
  s.spread = abi::schedule::spreads_pixels(d.groups, d.kernel_h, d.kernel_w, d.stride_h, d.stride_w, s.m_count, s.pitch,
                                           s.conv_cols, s.conv_rows * s.conv_cols);
  s.acc_stride = abi::schedule::accumulator_stride(s.spread, s.m_count);
  return s;
}

}  // namespace kernel
}  // namespace tessera
