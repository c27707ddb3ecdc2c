// accel_conv.h — the convolution engine: (grouped) convolution as implicit GEMM over on-chip tiles,
// int8 x int8 -> int32, bias, per-channel requantisation, clamp, optional fused max-pool.
//
// Schedule (one layer, one image). The output is cut into tiles of tile_m channels x tile_r rows x
// tile_c columns of the FINAL (post-pool) output; each output tile accumulates over the input
// channels of its group(s) in slices of tile_n. One "step" = one (output tile, channel slice).
// Three halves run concurrently on ping-pong buffers, in one loop iteration (the manual ping-pong
// form HLS schedules as concurrent function instances; in C simulation they run one after the other):
//   load    (accel_conv_load.h): step i+1's input and weight tiles, 512-bit beats from DDR;
//   compute (here): step i's MACs. For each tap (or, for few-channel tiles, each kernel row with the
//            kernel width folded into the vector) every conv pixel gathers its MAC vector straight
//            out of the input tile (implicit GEMM, thesis seeds/004_8229cf3b9b98f341.txt lowers conv
//            to GEMM; the lowering stays virtual) and the array does tile_m dot products of it, one
//            chunk of kMacChannels elements per cycle; the next tap's weights are staged into a
//            second register set meanwhile;
//   store   (accel_conv_store.h): the epilogue of the output tile finished before step i (bias,
//            requantise, clamp, fused max-pool, 512-bit writes), from the other accumulator tile.
// Each buffer set stays within half the on-chip memory (double buffering, Cecconi et al.
// seeds/000_930347495db50051.txt §3.2).
#pragma once

#include <cstdint>

#include "kernels/accel_common.h"
#include "kernels/accel_conv_geom.h"
#include "kernels/accel_conv_load.h"
#include "kernels/accel_conv_store.h"
#include "kernels/accel_pack.h"

namespace tessera {
namespace kernel {

// Stages the weights of tap row `tr` (tap t; kernel row ky when folded), vector group vg, into a
// register array: element e of lane m's vector is its group's channel vg x kMaxVector + e -
// lane_base (or, folded, channel e / kw at kx = e % kw). A lane's elements lie in distinct banks of w_buf except for
// `passes` collisions (abi::schedule::stage_passes); each pass reads one element per bank (in C simulation the whole
// row in the first pass).
static void stage_weights(const ConvStep& s, const abi::LayerDesc& d, const ConvGeom& g, uint32_t tr, uint32_t vg,
                          const weight_t w_buf[kBanks][kWBankRows], weight_t w_reg[abi::kMaxTileM][abi::kMaxVector]) {
  const uint32_t lane_rows = weight_lane_rows(s, g);
  const bool spans_groups = d.tile_m >= g.out_per_group;
  uint32_t lane_base = 0, lane_in_group = 0;
w_stage:
  for (uint32_t m = 0; m < abi::kMaxTileM; ++m) {
#pragma HLS pipeline II = 1
  w_stage_elems:
    for (uint32_t e = 0; e < abi::kMaxVector; ++e) {
      bool live;
      uint32_t f;
      if (g.per_channel > 1) {  // folded: (channel, kx) pairs of kernel row tr, or the whole window
        const uint32_t ch = e / g.per_channel, t = e % g.per_channel;
        live = e < s.vec_len;
        f = ch * g.taps + tr * d.kernel_w + t;
      } else {
        const int32_t jn = static_cast<int32_t>(vg * abi::kMaxVector + e) - static_cast<int32_t>(lane_base);
        live = jn >= 0 && static_cast<uint32_t>(jn) < s.n_count;
        f = static_cast<uint32_t>(jn) * g.taps + tr;
      }
      live = live && m < s.m_count;
      w_reg[m][e] = live ? w_buf[f % kBanks][m * lane_rows + f / kBanks] : weight_t(0);
    }
    if (spans_groups && ++lane_in_group == g.out_per_group) {
      lane_in_group = 0;
      lane_base += s.n_count;
    }
  }
}

// Element e of a conv pixel's MAC vector (vector group vg): input channel ch at input row and
// column offsets ky, kx (folded), read out of the skewed channel-major input tile; zero in the
// padding.
static act_t gather(const ConvStep& s, const abi::LayerDesc& d, const ConvGeom& g,
                    const act_t in_buf[kBanks][kInBankRows], uint32_t vg, uint32_t e, uint32_t row, uint32_t col) {
  const bool folded = g.per_channel > 1;
  const uint32_t ch = folded ? e / g.per_channel : vg * abi::kMaxVector + e;
  const uint32_t t = folded ? e % g.per_channel : 0;
  const uint32_t r = row + t / d.kernel_w, c = col + t % d.kernel_w;  // window row and column
  const uint32_t len = vg + 1 == s.vgroups ? s.vec_last : abi::kMaxVector;
  const bool ok = e < len && in_range(s.in_r0 + static_cast<int32_t>(r), d.in_h) &&
                  in_range(s.in_c0 + static_cast<int32_t>(c), d.in_w);
  const uint32_t q = static_cast<uint32_t>(static_cast<int32_t>(r * s.pitch + c) - s.col0);
  return ok ? in_buf[(q + ch * g.skew) % kBanks][ch * s.ch_rows + q / kBanks] : act_t(0);
}

// The MAC pixel loop of one tap row: per (conv pixel, chunk) one cycle-group of kConvII cycles,
// tile_m lanes x kMacChannels products; the chunk partial sums meet in a register and reach the
// accumulator tile at the pixel's last chunk. Lanes 2i and 2i + 1 multiply the same activation
// vec[j], so with TESSERA_INT8_PACK their two weights share one DSP48E2 product (accel_pack.h):
// kMacChannels x kMacLanes / 2 multipliers.
static void mac_pixels(const ConvStep& s, const abi::LayerDesc& d, const ConvGeom& g,
                       const act_t in_buf[kBanks][kInBankRows], const weight_t w_reg[abi::kMaxTileM][abi::kMaxVector],
                       uint32_t ky, uint32_t kx, uint32_t vg, uint32_t chunks, bool init,
                       acc_t out_buf[kOutputBufferElems]) {
  const uint32_t pixels = s.conv_rows * s.conv_cols;
  int32_t acc[abi::kMaxTileM];
#pragma HLS array_partition variable = acc complete
  uint32_t p = 0, c = 0, cr = 0, cc = 0;
conv_pixels:
  for (uint32_t it = 0; it < pixels * chunks; ++it) {
#pragma HLS pipeline II = kConvII
#pragma HLS loop_tripcount min = 1 max = 8192 avg = 512
#pragma HLS dependence variable = out_buf type = inter dependent = false
    const uint32_t row = cr * d.stride_h + ky * d.dilation_h;
    const uint32_t col = cc * d.stride_w + kx * d.dilation_w;
    act_t vec[kMacChannels];
  gather_chunk:
    for (uint32_t j = 0; j < kMacChannels; ++j) vec[j] = gather(s, d, g, in_buf, vg, c * kMacChannels + j, row, col);
  mac_lanes:
    for (uint32_t mp = 0; mp < abi::kMaxTileM; mp += 2) {
      // Lanes mp and mp + 1 share the activation vec[j]: one packed multiplication per pair.
      int32_t dot[2] = {0, 0};
    mac_chans:
      for (uint32_t j = 0; j < kMacChannels; ++j) {
        const uint32_t e = c * kMacChannels + j;
#if TESSERA_INT8_PACK
        const ProductPair pr = mul_pair(w_reg[mp + 1][e], w_reg[mp][e], vec[j]);
        dot[0] += pr.lo;
        dot[1] += pr.hi;
#else
        dot[0] += static_cast<int32_t>(w_reg[mp][e]) * static_cast<int32_t>(vec[j]);
        dot[1] += static_cast<int32_t>(w_reg[mp + 1][e]) * static_cast<int32_t>(vec[j]);
#endif
      }
    mac_pair_acc:
      for (uint32_t k = 0; k < 2; ++k) {
        const uint32_t m = mp + k;
        if (m < s.m_count) {
          const uint32_t o = p * s.acc_stride + m;
          const int32_t base = c != 0 ? acc[m] : (init ? 0 : out_buf[o]);
          acc[m] = wrap_add(base, dot[k]);
          if (c + 1 == chunks) out_buf[o] = acc[m];
        }
      }
    }
    if (++c == chunks) {
      c = 0;
      ++p;
      if (++cc == s.conv_cols) {
        cc = 0;
        ++cr;
      }
    }
  }
}

// Advances conv pixel (cr, cc) by a x conv_cols + b pixels (b < conv_cols).
inline void step_pixel(uint32_t& cr, uint32_t& cc, uint32_t a, uint32_t b, uint32_t conv_cols) {
  cc += b;
  cr += a;
  if (cc >= conv_cols) {
    cc -= conv_cols;
    ++cr;
  }
}

// The pixel loop of a spread step (abi::schedule::spreads_pixels, one 1x1 tap): per (pixel pair,
// chunk of kSpreadChannels elements) one cycle-group of kConvII cycles; lanes m < 32 compute
// pixel p of the pair, lanes 32 + m pixel p + 32, both output channel m with lane m's weights:
// the two pixels' activations share lane m's weight, packed into one DSP48E2 product (accel_pack.h).
constexpr uint32_t kSpreadChannels = abi::schedule::spread_channels(kMacChannels);
constexpr uint32_t kHalfLanes = abi::kMaxTileM / 2;

static void mac_pixels_spread(const ConvStep& s, const abi::LayerDesc& d, const ConvGeom& g,
                              const act_t in_buf[kBanks][kInBankRows],
                              const weight_t w_reg[abi::kMaxTileM][abi::kMaxVector], uint32_t vg, uint32_t chunks,
                              bool init, acc_t out_buf[kOutputBufferElems]) {
  const uint32_t pixels = s.conv_rows * s.conv_cols, cols = s.conv_cols;
  int32_t acc[abi::kMaxTileM];
#pragma HLS array_partition variable = acc complete
  // Pixel p at (cr[0], cc[0]) and p + 32 at (cr[1], cc[1]): both step by 1, by 33 at a block's end.
  uint32_t p = 0, i = 0, c = 0, cr[2] = {0, kHalfLanes / cols}, cc[2] = {0, kHalfLanes % cols};
  const uint32_t jump_a = (kHalfLanes + 1) / cols, jump_b = (kHalfLanes + 1) % cols, one = 1 % cols;
conv_pairs:
  for (uint32_t it = 0; it < abi::schedule::spread_pairs(pixels) * chunks; ++it) {
#pragma HLS pipeline II = kConvII
#pragma HLS loop_tripcount min = 1 max = 4096 avg = 256
#pragma HLS dependence variable = out_buf type = inter dependent = false
    act_t vec[2][kSpreadChannels];
  gather_pair:
    for (uint32_t k = 0; k < 2; ++k)
      for (uint32_t j = 0; j < kSpreadChannels; ++j)
        vec[k][j] =
            p + k * kHalfLanes < pixels ? gather(s, d, g, in_buf, vg, c * kSpreadChannels + j, cr[k], cc[k]) : act_t(0);
  spread_lanes:
    for (uint32_t lane = 0; lane < kHalfLanes; ++lane) {
      // Lanes lane and lane + 32 share lane's weight: the two pixels' activations are packed.
      int32_t dot[2] = {0, 0};
    spread_chans:
      for (uint32_t j = 0; j < kSpreadChannels; ++j) {
        const weight_t w = w_reg[lane][c * kSpreadChannels + j];
#if TESSERA_INT8_PACK
        const ProductPair pr = mul_pair(vec[1][j], vec[0][j], w);
        dot[0] += pr.lo;
        dot[1] += pr.hi;
#else
        dot[0] += static_cast<int32_t>(w) * static_cast<int32_t>(vec[0][j]);
        dot[1] += static_cast<int32_t>(w) * static_cast<int32_t>(vec[1][j]);
#endif
      }
    spread_pair_acc:
      for (uint32_t k = 0; k < 2; ++k) {
        const uint32_t m = lane + k * kHalfLanes, px = p + k * kHalfLanes;
        if (lane < s.m_count && px < pixels) {
          const uint32_t o = px * s.acc_stride + lane;  // odd stride: the pair's lanes in distinct banks
          const int32_t base = c != 0 ? acc[m] : (init ? 0 : out_buf[o]);
          acc[m] = wrap_add(base, dot[k]);
          if (c + 1 == chunks) out_buf[o] = acc[m];
        }
      }
    }
    if (++c < chunks) continue;
    c = 0;
    const bool block_end = ++i == kHalfLanes;
    if (block_end) i = 0;
    p += block_end ? kHalfLanes + 1 : 1;
    for (uint32_t k = 0; k < 2; ++k)
      step_pixel(cr[k], cc[k], block_end ? jump_a : 1 / cols, block_end ? jump_b : one, cols);
  }
}

// Depthwise: lane m's weights of kernel row ky (kernel_w consecutive elements, distinct banks).
static void dw_stage(const ConvStep& s, const abi::LayerDesc& d, const ConvGeom& g, uint32_t ky,
                     const weight_t w_buf[kBanks][kWBankRows], weight_t w_row[abi::kMaxTileM][abi::kMaxKernel]) {
  const uint32_t lane_rows = weight_lane_rows(s, g);
dw_stage_lanes:
  for (uint32_t m = 0; m < abi::kMaxTileM; ++m) {
#pragma HLS pipeline II = 1
  dw_stage_taps:
    for (uint32_t kx = 0; kx < abi::kMaxKernel; ++kx) {
      const uint32_t f = ky * d.kernel_w + kx;
      const bool live = m < s.m_count && kx < d.kernel_w;
      w_row[m][kx] = live ? w_buf[f % kBanks][m * lane_rows + f / kBanks] : weight_t(0);
    }
  }
}

// Depthwise pixel loop of kernel row ky: per cycle one input column of every lane's channel
// shifts into the lane's window (bank (q + m) % kBanks: all lanes at once); once the window
// holds a conv pixel's kernel_w columns, each lane adds its kernel_w products.
static void dw_pixels(const ConvStep& s, const abi::LayerDesc& d, const act_t in_buf[kBanks][kInBankRows],
                      const weight_t w_row[abi::kMaxTileM][abi::kMaxKernel], uint32_t ky, bool init,
                      acc_t out_buf[kOutputBufferElems]) {
  const uint32_t span = abi::schedule::depthwise_span(s.conv_cols, d.stride_w, d.kernel_w);
  act_t window[abi::kMaxTileM][abi::kMaxKernel] = {};  // window[m][j]: column ic - j
#pragma HLS array_partition variable = window complete dim = 0
  uint32_t cr = 0, ic = 0;
dw_cols:
  for (uint32_t it = 0; it < s.conv_rows * span; ++it) {
#pragma HLS pipeline II = kConvII
#pragma HLS loop_tripcount min = 1 max = 8192 avg = 256
#pragma HLS dependence variable = out_buf type = inter dependent = false
    const uint32_t row = cr * d.stride_h + ky * d.dilation_h;
    const bool ok =
        in_range(s.in_r0 + static_cast<int32_t>(row), d.in_h) && in_range(s.in_c0 + static_cast<int32_t>(ic), d.in_w);
    const uint32_t q = static_cast<uint32_t>(static_cast<int32_t>(row * s.pitch + ic) - s.col0);
    const bool emit = ic + 1 >= d.kernel_w && (ic + 1 - d.kernel_w) % d.stride_w == 0;
    const uint32_t p = cr * s.conv_cols + (emit ? (ic + 1 - d.kernel_w) / d.stride_w : 0);
  dw_lanes:
    for (uint32_t m = 0; m < abi::kMaxTileM; ++m) {
      for (uint32_t j = abi::kMaxKernel - 1; j > 0; --j) window[m][j] = window[m][j - 1];
      window[m][0] = ok && m < s.m_count ? in_buf[(q + m) % kBanks][m * s.ch_rows + q / kBanks] : act_t(0);
      if (emit && m < s.m_count) {
        int32_t dot = 0;
      dw_taps:
        for (uint32_t kx = 0; kx < abi::kMaxKernel; ++kx) {
          if (kx < d.kernel_w)
            dot += static_cast<int32_t>(w_row[m][kx]) * static_cast<int32_t>(window[m][d.kernel_w - 1 - kx]);
        }
        const uint32_t o = p * s.acc_stride + m;
        out_buf[o] = wrap_add(init ? 0 : out_buf[o], dot);
      }
    }
    if (++ic == span) {
      ic = 0;
      ++cr;
    }
  }
}

// The compute half of a depthwise step: per kernel row the pixel loop, beside it the staging of
// the next row's weights (the longer of the two sets the row's time).
static void compute_dw_tile(const ConvStep& s, const abi::LayerDesc& d, const ConvGeom& g,
                            const act_t in_buf[kBanks][kInBankRows], const weight_t w_buf[kBanks][kWBankRows],
                            acc_t out_buf[kOutputBufferElems]) {
  weight_t w_row[2][abi::kMaxTileM][abi::kMaxKernel];
#pragma HLS array_partition variable = w_row complete dim = 0
  namespace sch = abi::schedule;
  const uint64_t stage_cycles = abi::kMaxTileM + sch::kWeightStageDepth;
  const uint64_t mac_cycles =
      static_cast<uint64_t>(s.conv_rows) * sch::depthwise_span(s.conv_cols, d.stride_w, d.kernel_w) * kConvII +
      sch::kConvPixelDepth;
  dw_stage(s, d, g, 0, w_buf, w_row[0]);
  TESSERA_COUNT_CYCLES(kHalfCompute, stage_cycles);
dw_rows:
  for (uint32_t ky = 0; ky < d.kernel_h; ++ky) {
#pragma HLS loop_tripcount min = 1 max = 11 avg = 3
    const bool more = ky + 1 < d.kernel_h;
    if (more) dw_stage(s, d, g, ky + 1, w_buf, w_row[(ky + 1) & 1]);
    dw_pixels(s, d, in_buf, w_row[ky & 1], ky, s.first_k && ky == 0, out_buf);
    TESSERA_COUNT_CYCLES(kHalfCompute, more && stage_cycles > mac_cycles ? stage_cycles : mac_cycles);
  }
  (void)stage_cycles;
  (void)mac_cycles;
}

// The compute half of a step: per unit (tap row x vector group) the pixel loop, beside it the
// staging of the next unit's weights into the other register set (the longer of the two sets the
// unit's time).
static void compute_conv_tile(const ConvStep& s, const abi::LayerDesc& d, const ConvGeom& g,
                              const act_t in_buf[kBanks][kInBankRows], const weight_t w_buf[kBanks][kWBankRows],
                              acc_t out_buf[kOutputBufferElems]) {
#pragma HLS inline off
  // Fold the kMaxTileM lanes onto the synthesised kMacLanes x kMacChannels MACs: kMacMultipliers
  // DSP slices, two MACs each where they are packed (accel_pack.h mul_pair).
#pragma HLS allocation operation instances = mul limit = kMacMultipliers
  if (g.depthwise) {
    compute_dw_tile(s, d, g, in_buf, w_buf, out_buf);
    return;
  }
  // Two register sets of one unit's weights, one row per lane (seeds/004: operand tiles
  // partitioned so every multiplier has its own port).
  weight_t w_reg[2][abi::kMaxTileM][abi::kMaxVector];
#pragma HLS array_partition variable = w_reg complete dim = 0
  namespace sch = abi::schedule;
  const uint32_t pixels = s.conv_rows * s.conv_cols, units = g.tap_rows * s.vgroups;
  const bool spread = s.spread;
  const uint64_t stage_cycles = static_cast<uint64_t>(abi::kMaxTileM) * s.passes + sch::kWeightStageDepth;
  stage_weights(s, d, g, 0, 0, w_buf, w_reg[0]);
  TESSERA_COUNT_CYCLES(kHalfCompute, stage_cycles);
  (void)stage_cycles;
  uint32_t ky = 0, kx = 0, tr = 0, vg = 0;
conv_units:
  for (uint32_t u = 0; u < units; ++u) {
#pragma HLS loop_tripcount min = 1 max = 121 avg = 9
    const bool more = u + 1 < units;
    const uint32_t next_vg = vg + 1 == s.vgroups ? 0 : vg + 1, next_tr = next_vg == 0 ? tr + 1 : tr;
    if (more) stage_weights(s, d, g, next_tr, next_vg, w_buf, w_reg[(u + 1) & 1]);
    const uint32_t len = vg + 1 == s.vgroups ? s.vec_last : abi::kMaxVector;
    const uint32_t chunks = sch::vector_chunks(len, spread ? kSpreadChannels : kMacChannels);
    if (spread) {
      mac_pixels_spread(s, d, g, in_buf, w_reg[u & 1], vg, chunks, s.first_k && u == 0, out_buf);
    } else {
      mac_pixels(s, d, g, in_buf, w_reg[u & 1], ky, g.per_channel > 1 ? 0 : kx, vg, chunks, s.first_k && u == 0,
                 out_buf);
    }
    const uint64_t mac_cycles =
        static_cast<uint64_t>(spread ? sch::spread_pairs(pixels) : pixels) * chunks * kConvII + sch::kConvPixelDepth;
    TESSERA_COUNT_CYCLES(kHalfCompute, more && stage_cycles > mac_cycles ? stage_cycles : mac_cycles);
    (void)mac_cycles;
    if (next_vg == 0 && (g.per_channel > 1 || ++kx == d.kernel_w)) {
      kx = 0;
      ++ky;
    }
    tr = next_tr;
    vg = next_vg;
  }
}

// One convolution layer for one image (image = the image's arena base), on the kernel's buffers
// (tessera_accel.cpp): ping-pong pairs of input, weight and accumulator tiles and of the store
// half's int8 staging tiles, 2 x (input + weight + output + staging) on chip. Four halves per step:
// load (next tiles), compute (this step), store (requantise the last finished output tile into a
// staging tile) and write (the tile requantised one step earlier, from the other staging tile).
static void conv_layer(const abi::LayerDesc& d, const weight_t* weights, const int32_t* quant, act_t* image,
                       act_t in_buf[2][kBanks][kInBankRows], weight_t w_buf[2][kBanks][kWBankRows],
                       acc_t out_buf[2][kOutputBufferElems], act_t stage[2][kBanks][kStageBankRows]) {
  const ConvGeom g = make_conv_geom(d);
  if (g.steps == 0) return;
  ConvCursor cursor = {0, 0, 0, 0};
  ConvStep cur = make_conv_step(d, g, cursor);
  load_conv_tile(cur, d, g, image, weights, true, in_buf[0], w_buf[0]);  // prologue: fill the first half
  uint32_t in_half = 0;                                                  // cur's input tile is in in_buf[in_half]
  uint32_t w_half = 0;                                                   // cur's weight tile is in w_buf[w_half]
  uint32_t acc_half = 0;                                                 // cur accumulates into out_buf[acc_half]
  bool pending = false;  // an output tile waits for the store half, in out_buf[acc_half ^ 1]
  ConvStep done = cur;
  bool to_write = false;  // a requantised tile waits for the write half, in stage[st_half ^ 1]
  ConvStep written = cur;
  uint32_t st_half = 0;  // the store half requantises into stage[st_half]
conv_steps:
  for (uint32_t step = 0; step < g.steps; ++step) {
#pragma HLS loop_tripcount min = 1 max = 4096 avg = 64
    const bool has_next = step + 1 < g.steps;
    advance(cursor, g);
    const ConvStep next = has_next ? make_conv_step(d, g, cursor) : cur;
    // Input stationary: the next step of the same spatial position computes from cur's input tile.
    const bool new_input = !(g.input_stationary && next.r0 == cur.r0 && next.c0 == cur.c0);
    TESSERA_COUNT_STEP();
    if (has_next) load_conv_tile(next, d, g, image, weights, new_input, in_buf[in_half ^ 1], w_buf[w_half ^ 1]);
    if (to_write) write_conv_tile(written, d, g, stage[st_half ^ 1], image);
    to_write = pending;
    if (pending) {
      store_conv_tile(done, d, g, out_buf[acc_half ^ 1], quant, stage[st_half]);
      written = done;
      st_half ^= 1;
    }
    compute_conv_tile(cur, d, g, in_buf[in_half], w_buf[w_half], out_buf[acc_half]);
    pending = cur.last_k;
    if (cur.last_k) {
      done = cur;
      acc_half ^= 1;
    }
    if (new_input) in_half ^= 1;
    w_half ^= 1;
    cur = next;
  }
  // Epilogue: the last writes, the last output tile's store and write.
  if (to_write) write_conv_tile(written, d, g, stage[st_half ^ 1], image);
  if (pending) {
    store_conv_tile(done, d, g, out_buf[acc_half ^ 1], quant, stage[st_half]);
    write_conv_tile(done, d, g, stage[st_half], image);
  }
}

}  // namespace kernel
}  // namespace tessera
