// accel_conv.h — the convolution engine: (grouped) convolution as implicit GEMM over on-chip tiles,
// int8 x int8 -> int32, bias, per-channel requantisation, clamp, optional fused max-pool.
//
// Schedule (one layer, one image). The output is cut into tiles of tile_m channels x tile_r rows x
// tile_c columns of the FINAL (post-pool) output; each output tile accumulates over the input
// channels of its group(s) in slices of tile_n. One "step" = one (output tile, channel slice):
//   load   : input tile (channels x in_rows x in_cols, zero padding filled here) and weight tile
//            (tile_m x tile_n x kh x kw) from DDR into one half of the ping-pong buffers;
//   compute: for every kernel tap, the tile_m x tile_n weights sit in a register array and every
//            conv pixel of the tile does tile_m dot products of tile_n int8 products — the im2col
//            row is read straight out of the input tile, never written anywhere (implicit GEMM,
//            thesis seeds/004_8229cf3b9b98f341.txt lowers conv to GEMM; we keep the lowering
//            virtual);
//   store  : after the last channel slice, bias + requantise + clamp, fused max-pool, and write
//            the tile into its channel slice of the output tensor.
// Step i+1's load runs while step i computes (double buffering within half the on-chip memory
// per buffer set, Cecconi et al. seeds/000_930347495db50051.txt §3.2): conv_layer() calls
// load_conv_tile() and compute_store_tile() on opposite buffers in the same loop iteration, the
// manual ping-pong form HLS schedules as two concurrent function instances. In C simulation the
// two calls just run one after the other.
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
  return g;
}

// Position of one step in the (m, r, c, k) tile loop, k fastest.
struct ConvCursor {
  uint32_t mt, rt, ct, kt;
};

inline void advance(ConvCursor& cur, const ConvGeom& g) {
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
  bool first_k, last_k;
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
  s.first_k = cur.kt == 0;
  s.last_k = cur.kt + 1 == g.k_tiles;
  return s;
}

// DDR -> input tile, stored pixel-major with the tile's channels innermost
// ((row * in_cols + col) * ch_count + ch), so one pixel's channels sit in consecutive banks of the
// cyclic partition and the MAC array reads them in one cycle. Out-of-tensor positions (padding)
// are filled with zeros here, so compute never tests bounds.
// DMA runs: when the tile spans all output columns, every input row is read whole (all in_w
// columns, a superset of the in_cols the windows need: a stride-2 1x1 conv needs 13 of 14), so
// a channel's rows of the tile are one contiguous run in CHW; columns outside the window are
// dropped on the way in. Otherwise each input row is its own run of in_cols columns.
static void load_input_tile(const ConvStep& s, const abi::LayerDesc& d, const ConvGeom& g, const act_t* image,
                            act_t in_buf[kInputBufferElems]) {
#pragma HLS inline off
  // Input columns swept per row: [in_c0, in_c0 + in_cols), widened to [in_c0, in_w) for whole
  // rows (in_c0 <= 0 there: the tile starts at output column 0).
  const bool whole_rows = g.c_tiles == 1;
  const int32_t x_end = s.in_c0 + static_cast<int32_t>(s.in_cols);
  const int32_t sweep_end = whole_rows && x_end < static_cast<int32_t>(d.in_w) ? static_cast<int32_t>(d.in_w) : x_end;
  const uint32_t sweep = static_cast<uint32_t>(sweep_end - s.in_c0);
  uint32_t ch = 0;
in_groups:
  for (uint32_t gl = 0; gl < s.groups; ++gl) {
#pragma HLS loop_tripcount min = 1 max = 64 avg = 1
  in_chans:
    for (uint32_t n = 0; n < s.n_count; ++n, ++ch) {
#pragma HLS loop_tripcount min = 1 max = 64 avg = 16
      const uint32_t chan = d.in_channel_base + (s.group0 + gl) * g.in_per_group + s.k0 + n;
    in_rows:
      for (uint32_t r = 0; r < s.in_rows; ++r) {
#pragma HLS loop_tripcount min = 1 max = 256 avg = 18
        const int32_t iy = s.in_r0 + static_cast<int32_t>(r);
        const bool row_ok = in_range(iy, d.in_h);
        const uint32_t src_row = d.in_offset + (chan * d.in_h + (row_ok ? static_cast<uint32_t>(iy) : 0)) * d.in_w;
      in_cols:
        for (uint32_t c = 0; c < sweep; ++c) {
#pragma HLS pipeline II = 1
#pragma HLS loop_tripcount min = 1 max = 256 avg = 18
          const int32_t ix = s.in_c0 + static_cast<int32_t>(c);
          const bool in_tensor = row_ok && in_range(ix, d.in_w);
          if (in_tensor) TESSERA_COUNT_READ(kPortArena, &image[src_row + static_cast<uint32_t>(ix)]);
          const act_t v = in_tensor ? image[src_row + static_cast<uint32_t>(ix)] : act_t(0);
          if (c < s.in_cols) in_buf[(r * s.in_cols + c) * s.ch_count + ch] = v;
        }
        TESSERA_COUNT_LOOP(kHalfLoad, sweep, 1, abi::schedule::kLoadDepth);
      }
    }
  }
}

// DDR -> weight tile, stored tap-major ((tap * m_count + m) * n_count + n). In DDR a lane's
// n_count x taps weights are one contiguous run ([out_c][in_c/groups][kh][kw]): one burst per lane.
static void load_weight_tile(const ConvStep& s, const abi::LayerDesc& d, const ConvGeom& g, const weight_t* weights,
                             weight_t w_buf[kWeightBufferElems]) {
#pragma HLS inline off
w_lanes:
  for (uint32_t m = 0; m < s.m_count; ++m) {
#pragma HLS loop_tripcount min = 1 max = 64 avg = 32
    const uint32_t src = d.weight_offset + ((s.m0 + m) * g.in_per_group + s.k0) * g.taps;
    uint32_t n = 0, t = 0;
  w_run:
    for (uint32_t i = 0; i < s.n_count * g.taps; ++i) {
#pragma HLS pipeline II = 1
#pragma HLS loop_tripcount min = 1 max = 4096 avg = 144
      TESSERA_COUNT_READ(kPortWeights, &weights[src + i]);
      w_buf[(t * s.m_count + m) * s.n_count + n] = weights[src + i];
      if (++t == g.taps) {
        t = 0;
        ++n;
      }
    }
    TESSERA_COUNT_LOOP(kHalfLoad, s.n_count * g.taps, 1, abi::schedule::kLoadDepth);
  }
}

// The load half of a step: both tiles of the next step, into the buffer pair compute is not using.
static void load_conv_tile(const ConvStep& s, const abi::LayerDesc& d, const ConvGeom& g, const act_t* image,
                           const weight_t* weights, act_t in_buf[kInputBufferElems],
                           weight_t w_buf[kWeightBufferElems]) {
#pragma HLS inline off
  load_input_tile(s, d, g, image, in_buf);
  load_weight_tile(s, d, g, weights, w_buf);
}

// The MAC array: for each kernel tap, tile_m lanes x tile_n channels of int8 products per conv
// pixel, accumulated in int32 (mod 2^32) into the output tile. Grouped/depthwise tiles use the same
// dense array: lane m only gets non-zero weights on its own group's channels of the input tile.
static void compute_conv_tile(const ConvStep& s, const abi::LayerDesc& d, const ConvGeom& g,
                              const act_t in_buf[kInputBufferElems], const weight_t w_buf[kWeightBufferElems],
                              acc_t out_buf[kOutputBufferElems]) {
#pragma HLS inline off
  // Fold the 64 x 64 datapath onto the synthesised kMacLanes x kMacChannels multipliers.
#pragma HLS allocation operation instances = mul limit = kMacCount
  // Weights of the current tap, one row per lane (seeds/004: operand tiles partitioned so every
  // multiplier has its own port).
  weight_t w_reg[abi::kMaxTileM][abi::kMaxTileN];
#pragma HLS array_partition variable = w_reg cyclic factor = kMacLanes dim = 1
#pragma HLS array_partition variable = w_reg cyclic factor = kMacChannels dim = 2
  // First input-tile channel of each lane's group (0 unless the tile spans several groups).
  uint32_t lane_base[abi::kMaxTileM];
#pragma HLS array_partition variable = lane_base complete
  const bool spans_groups = d.tile_m >= g.out_per_group;
  uint32_t lane_group = 0, lane_in_group = 0;
lane_bases:
  for (uint32_t m = 0; m < abi::kMaxTileM; ++m) {
#pragma HLS pipeline II = 1
    lane_base[m] = lane_group * s.n_count;
    if (spans_groups && ++lane_in_group == g.out_per_group) {
      lane_in_group = 0;
      ++lane_group;
    }
  }
  TESSERA_COUNT_LOOP(kHalfCompute, abi::kMaxTileM, 1, abi::schedule::kLaneBaseDepth);

  const uint32_t pixels = s.conv_rows * s.conv_cols;
  uint32_t ky = 0, kx = 0;
conv_taps:
  for (uint32_t t = 0; t < g.taps; ++t) {
#pragma HLS loop_tripcount min = 1 max = 121 avg = 9
    // Stage this tap's weights into the register array (block-diagonal for grouped tiles).
  w_stage:
    for (uint32_t m = 0; m < abi::kMaxTileM; ++m) {
#pragma HLS pipeline II = 1
    w_stage_chans:
      for (uint32_t j = 0; j < abi::kMaxTileN; ++j) {
        const int32_t jn = static_cast<int32_t>(j) - static_cast<int32_t>(lane_base[m]);
        const bool live = m < s.m_count && jn >= 0 && static_cast<uint32_t>(jn) < s.n_count;
        w_reg[m][j] = live ? w_buf[(t * s.m_count + m) * s.n_count + static_cast<uint32_t>(jn)] : weight_t(0);
      }
    }
    TESSERA_COUNT_LOOP(kHalfCompute, abi::kMaxTileM, 1, abi::schedule::kWeightStageDepth);
    const bool init = s.first_k && t == 0;
    const uint32_t row_off = ky * d.dilation_h;
    const uint32_t col_off = kx * d.dilation_w;
    uint32_t cr = 0, cc = 0;
  conv_pixels:
    for (uint32_t p = 0; p < pixels; ++p) {
#pragma HLS pipeline II = kConvII
#pragma HLS loop_tripcount min = 1 max = 4096 avg = 256
#pragma HLS dependence variable = out_buf type = inter dependent = false
      // One im2col row, gathered from the input tile (implicit GEMM: never materialised).
      const uint32_t base = ((cr * d.stride_h + row_off) * s.in_cols + cc * d.stride_w + col_off) * s.ch_count;
      act_t in_vec[abi::kMaxTileN];
    gather:
      for (uint32_t j = 0; j < abi::kMaxTileN; ++j) {
        in_vec[j] = j < s.ch_count ? in_buf[base + j] : act_t(0);
      }
    mac_lanes:
      for (uint32_t m = 0; m < abi::kMaxTileM; ++m) {
        if (m < s.m_count) {
          int32_t dot = 0;
        mac_chans:
          for (uint32_t j = 0; j < abi::kMaxTileN; ++j) {
            dot += static_cast<int32_t>(w_reg[m][j]) * static_cast<int32_t>(in_vec[j]);
          }
          const uint32_t o = p * s.m_count + m;
          out_buf[o] = init ? dot : wrap_add(out_buf[o], dot);
        }
      }
      if (++cc == s.conv_cols) {
        cc = 0;
        ++cr;
      }
    }
    TESSERA_COUNT_LOOP(kHalfCompute, pixels, kConvII, abi::schedule::kConvPixelDepth);
    if (++kx == d.kernel_w) {
      kx = 0;
      ++ky;
    }
  }
}

// Epilogue of an output tile: bias + requantize() with the channel's {multiplier, shift} + clamp,
// then the fused max-pool (padded positions never win; the max starts at -128) and the write into
// channels [out_channel_base + m0, + m_count) of the output tensor.
static void store_conv_tile(const ConvStep& s, const abi::LayerDesc& d, const ConvGeom& g,
                            acc_t out_buf[kOutputBufferElems], const int32_t* quant, act_t* image) {
#pragma HLS inline off
  int32_t bias[abi::kMaxTileM], mult[abi::kMaxTileM], shift[abi::kMaxTileM];
#pragma HLS array_partition variable = bias complete
#pragma HLS array_partition variable = mult complete
#pragma HLS array_partition variable = shift complete
  // quant layout per conv layer: bias[out_c], multiplier[out_c], shift[out_c] at quant_offset.
  const uint32_t q = d.quant_offset + s.m0;
q_bias:
  for (uint32_t m = 0; m < s.m_count; ++m) {
#pragma HLS pipeline II = 1
#pragma HLS loop_tripcount min = 1 max = 64 avg = 32
    TESSERA_COUNT_READ(kPortQuant, &quant[q + m]);
    bias[m] = quant[q + m];
  }
  TESSERA_COUNT_LOOP(kHalfCompute, s.m_count, 1, abi::schedule::kQuantReadDepth);
q_mult:
  for (uint32_t m = 0; m < s.m_count; ++m) {
#pragma HLS pipeline II = 1
#pragma HLS loop_tripcount min = 1 max = 64 avg = 32
    TESSERA_COUNT_READ(kPortQuant, &quant[q + d.out_c + m]);
    mult[m] = quant[q + d.out_c + m];
  }
  TESSERA_COUNT_LOOP(kHalfCompute, s.m_count, 1, abi::schedule::kQuantReadDepth);
q_shift:
  for (uint32_t m = 0; m < s.m_count; ++m) {
#pragma HLS pipeline II = 1
#pragma HLS loop_tripcount min = 1 max = 64 avg = 32
    TESSERA_COUNT_READ(kPortQuant, &quant[q + 2 * d.out_c + m]);
    shift[m] = quant[q + 2 * d.out_c + m];
  }
  TESSERA_COUNT_LOOP(kHalfCompute, s.m_count, 1, abi::schedule::kQuantReadDepth);

  const uint32_t pixels = s.conv_rows * s.conv_cols;
requant_pixels:
  for (uint32_t p = 0; p < pixels; ++p) {
#pragma HLS pipeline II = kRequantII
#pragma HLS loop_tripcount min = 1 max = 4096 avg = 256
  requant_lanes:
    for (uint32_t m = 0; m < abi::kMaxTileM; ++m) {
      if (m < s.m_count) {
        const uint32_t o = p * s.m_count + m;
        out_buf[o] = abi::requantize(wrap_add(out_buf[o], bias[m]), mult[m], shift[m], d.act_lo, d.act_hi);
      }
    }
  }
  TESSERA_COUNT_LOOP(kHalfCompute, pixels, kRequantII, abi::schedule::kRequantDepth);

  const uint32_t out_plane = d.out_h * d.out_w;
st_lanes:
  for (uint32_t m = 0; m < s.m_count; ++m) {
#pragma HLS loop_tripcount min = 1 max = 64 avg = 32
    const uint32_t dst_chan = d.out_offset + (d.out_channel_base + s.m0 + m) * out_plane;
  st_rows:
    for (uint32_t pr = 0; pr < s.r_count; ++pr) {
#pragma HLS loop_tripcount min = 1 max = 64 avg = 16
      const uint32_t dst_row = dst_chan + (s.r0 + pr) * d.out_w + s.c0;
    st_cols:
      for (uint32_t pc = 0; pc < s.c_count; ++pc) {
#pragma HLS pipeline II = 1
#pragma HLS loop_tripcount min = 1 max = 64 avg = 16
        int32_t y;
        if (g.pooled) {
          int32_t best = kInt8Min;
        pool_wy:
          for (uint32_t wy = 0; wy < abi::kMaxPoolKernel; ++wy) {
          pool_wx:
            for (uint32_t wx = 0; wx < abi::kMaxPoolKernel; ++wx) {
              if (wy < g.pool_h && wx < g.pool_w) {
                const uint32_t cr = pr * g.pool_sh + wy;
                const uint32_t cc = pc * g.pool_sw + wx;
                if (in_range(s.conv_r0 + static_cast<int32_t>(cr), d.conv_h) &&
                    in_range(s.conv_c0 + static_cast<int32_t>(cc), d.conv_w)) {
                  best = max_i32(best, out_buf[(cr * s.conv_cols + cc) * s.m_count + m]);
                }
              }
            }
          }
          y = best;
        } else {
          y = out_buf[(pr * s.conv_cols + pc) * s.m_count + m];
        }
        TESSERA_COUNT_WRITE(kPortArena, &image[dst_row + pc]);
        image[dst_row + pc] = static_cast<act_t>(y);
      }
      TESSERA_COUNT_LOOP(kHalfCompute, s.c_count, 1, abi::schedule::kStoreDepth);
    }
  }
}

// The compute half of a step: MACs, then the epilogue when the step finishes its output tile.
static void compute_store_tile(const ConvStep& s, const abi::LayerDesc& d, const ConvGeom& g,
                               const act_t in_buf[kInputBufferElems], const weight_t w_buf[kWeightBufferElems],
                               acc_t out_buf[kOutputBufferElems], const int32_t* quant, act_t* image) {
#pragma HLS inline off
  compute_conv_tile(s, d, g, in_buf, w_buf, out_buf);
  if (s.last_k) store_conv_tile(s, d, g, out_buf, quant, image);
}

// One convolution layer for one image (image = the image's arena base). Two input and two weight
// buffers (ping-pong) plus one output accumulator tile: 2 x (input + weight) + output on chip.
static void conv_layer(const abi::LayerDesc& d, const weight_t* weights, const int32_t* quant, act_t* image) {
  act_t in_ping[kInputBufferElems], in_pong[kInputBufferElems];
  weight_t w_ping[kWeightBufferElems], w_pong[kWeightBufferElems];
  acc_t out_buf[kOutputBufferElems];
#pragma HLS array_partition variable = in_ping cyclic factor = kMacChannels
#pragma HLS array_partition variable = in_pong cyclic factor = kMacChannels
#pragma HLS array_partition variable = w_ping cyclic factor = kMacChannels
#pragma HLS array_partition variable = w_pong cyclic factor = kMacChannels
#pragma HLS array_partition variable = out_buf cyclic factor = kMacLanes
#pragma HLS bind_storage variable = in_ping type = ram_2p impl = bram
#pragma HLS bind_storage variable = in_pong type = ram_2p impl = bram
#pragma HLS bind_storage variable = w_ping type = ram_2p impl = bram
#pragma HLS bind_storage variable = w_pong type = ram_2p impl = bram
#if TESSERA_OUT_URAM
#pragma HLS bind_storage variable = out_buf type = ram_2p impl = uram
#else
#pragma HLS bind_storage variable = out_buf type = ram_2p impl = bram
#endif

  const ConvGeom g = make_conv_geom(d);
  if (g.steps == 0) return;
  ConvCursor cursor = {0, 0, 0, 0};
  ConvStep cur = make_conv_step(d, g, cursor);
  load_conv_tile(cur, d, g, image, weights, in_ping, w_ping);  // prologue: fill the first half
  bool ping = true;                                            // cur's tiles are in the ping buffers
conv_steps:
  for (uint32_t step = 0; step < g.steps; ++step) {
#pragma HLS loop_tripcount min = 1 max = 4096 avg = 64
    const bool has_next = step + 1 < g.steps;
    advance(cursor, g);
    const ConvStep next = has_next ? make_conv_step(d, g, cursor) : cur;
    TESSERA_COUNT_STEP();
    if (ping) {
      if (has_next) load_conv_tile(next, d, g, image, weights, in_pong, w_pong);
      compute_store_tile(cur, d, g, in_ping, w_ping, out_buf, quant, image);
    } else {
      if (has_next) load_conv_tile(next, d, g, image, weights, in_ping, w_ping);
      compute_store_tile(cur, d, g, in_pong, w_pong, out_buf, quant, image);
    }
    ping = !ping;
    cur = next;
  }
}

}  // namespace kernel
}  // namespace tessera
