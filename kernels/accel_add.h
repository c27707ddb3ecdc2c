// accel_add.h — element-wise add of two int8 tensors (kOpAdd: ResNet / MobileNet shortcuts):
// y = requantize_add(a, b, M_a, M_b, S, act_lo, act_hi) with {M_a, M_b, S} at quant_offset.
// a, b and y are out_c x out_h x out_w channel slices (in_channel_base, in2_channel_base,
// out_channel_base) of their tensors; both inputs have the output's shape.
//
// Schedule: the requantisation is per tensor ({M_a, M_b, S} for every element), and one image's
// out_c channels of a tensor are one contiguous block of out_c x out_h x out_w bytes in CHW (a
// channel slice [base, base + out_c) too). So the three blocks stream flat, in chunks of up to
// tile_r x tile_c bytes (up to abi::kAddChunkBytes = 32 KiB: both operands in one of the conv
// engine's input tiles, the result in one of its staging tiles): per chunk the two inputs
// come in as 512-bit beats (add_read_a, add_read_b), kAddLanes requantize_add units take
// kAddLanes elements per cycle (add_lanes), and the results go back as beats (add_write). The
// chunks are ping-ponged: the reads of chunk c + 1, the lanes of chunk c and the writes of chunk
// c - 1 run concurrently on paired chunk buffers. Channel planes play no part: a 7x7 plane costs
// no more DMA calls than a 56x56 one. A chunk is read completely before it is written, and a
// step's reads and writes touch different chunks, so an in-place add (out_offset == in_offset,
// same channel slice) is safe.
#pragma once

#include <cstdint>

#include "kernels/accel_common.h"
#include "kernels/accel_conv_store.h"

namespace tessera {
namespace kernel {

// Elements per cycle of the add: kAddLanes requantize_add units, two int8 x int32 products each
// (2 DSP48 per product: 4 per lane; the resource estimate counts them). TESSERA_ADD_LANES is the
// board profile's add_lanes (kernels/Makefile reads it from accel/plan/boards/<board>.toml).
#ifndef TESSERA_ADD_LANES
#define TESSERA_ADD_LANES 16
#endif
constexpr uint32_t kAddLanes = TESSERA_ADD_LANES;
static_assert(kAddLanes >= 1 && abi::schedule::kMaxAddLanes % kAddLanes == 0, "add lanes must divide kMaxAddLanes");

// Chunk buffers: the conv engine's banked tiles. Element i of a chunk is bank (i + rot) % kBanks,
// row row0 + i / kBanks: operand a at row 0 (rot 0) and operand b at row kAddBRow, rotated by
// kAddBRot (so the lanes' a and b elements sit in different banks) of one input tile; the result
// at row 0 of a staging tile (rot 0).
constexpr uint32_t kAddBRow = abi::kAddChunkBytes / kBanks;
constexpr uint32_t kAddBRot = kBanks / 2;
static_assert(abi::schedule::kMaxAddLanes <= kAddBRot, "a lane group's a and b elements in distinct banks");

// One run of `count` bytes at image[src] into buf from row row0, 512-bit beats.
static void add_read(const act_t* image, uint32_t src, uint32_t count, act_t buf[kBanks][kInBankRows], uint32_t row0,
                     uint32_t rot) {
  const uint32_t n_beats = abi::schedule::run_beats(src, count);
add_read_beats:
  for (uint32_t k = 0; k < n_beats; ++k) {
#pragma HLS pipeline II = 1
#pragma HLS loop_tripcount min = 1 max = 513 avg = 512
    const uint32_t word = (src / abi::kBeatBytes + k) * abi::kBeatBytes;
    const uint32_t a = word < src ? src : word;
    const uint32_t b = word + abi::kBeatBytes < src + count ? word + abi::kBeatBytes : src + count;
    TESSERA_COUNT_READ_BEAT(kPortArena, &image[a], b - a);
  add_read_bytes:
    for (uint32_t j = 0; j < abi::kBeatBytes; ++j) {
      const uint32_t i = word + j - src;
      if (word + j >= a && word + j < b) buf[(i + rot) % kBanks][row0 + i / kBanks] = image[word + j];
    }
  }
  TESSERA_COUNT_LOOP(kHalfLoad, n_beats, 1, abi::schedule::kLoadDepth);
}

// buf's count bytes back to image[dst], 512-bit beats.
static void add_write(const act_t buf[kBanks][kStageBankRows], uint32_t count, act_t* image, uint32_t dst) {
  const uint32_t n_beats = abi::schedule::run_beats(dst, count);
add_write_beats:
  for (uint32_t k = 0; k < n_beats; ++k) {
#pragma HLS pipeline II = 1
#pragma HLS loop_tripcount min = 1 max = 513 avg = 512
    const uint32_t word = (dst / abi::kBeatBytes + k) * abi::kBeatBytes;
    const uint32_t a = word < dst ? dst : word;
    const uint32_t b = word + abi::kBeatBytes < dst + count ? word + abi::kBeatBytes : dst + count;
    TESSERA_COUNT_WRITE_BEAT(kPortArena, &image[a], b - a);
  add_write_bytes:
    for (uint32_t j = 0; j < abi::kBeatBytes; ++j) {
      const uint32_t i = word + j - dst;
      if (word + j >= a && word + j < b) image[word + j] = buf[i % kBanks][i / kBanks];
    }
  }
  TESSERA_COUNT_LOOP(kHalfStore, n_beats, 1, abi::schedule::kStoreDepth);
}

// The add lanes of one chunk: kAddLanes requantize_add units per cycle, a and b into y.
static void add_lanes(const act_t ab[kBanks][kInBankRows], uint32_t count, const int32_t q[3], const abi::LayerDesc& d,
                      act_t y[kBanks][kStageBankRows]) {
#pragma HLS inline off
add_lanes_loop:
  for (uint32_t i = 0; i < count; i += kAddLanes) {
#pragma HLS pipeline II = 1
#pragma HLS loop_tripcount min = 1 max = 2048 avg = 2048
  add_lane:
    for (uint32_t j = 0; j < kAddLanes; ++j) {
      const uint32_t e = i + j;
      if (e < count) {
        y[e % kBanks][e / kBanks] = static_cast<act_t>(
            abi::requantize_add(ab[e % kBanks][e / kBanks], ab[(e + kAddBRot) % kBanks][kAddBRow + e / kBanks], q[0],
                                q[1], q[2], d.act_lo, d.act_hi));
      }
    }
  }
  TESSERA_COUNT_LOOP(kHalfCompute, ceil_div(count, kAddLanes), 1, abi::schedule::kAddDepth);
}

// Chunk c of the flat block: its length.
inline uint32_t add_chunk_count(uint32_t c, uint32_t chunk, uint32_t block) {
  return min_u32(chunk, block - c * chunk);
}

// Ping-pong over chunks: step c reads chunk c + 1 into one input tile, adds chunk c from the other
// into a staging tile and writes chunk c - 1 from the other staging tile (the reads and the writes
// of a step touch different chunks, so an in-place add stays safe).
static void add_layer(const abi::LayerDesc& d, const int32_t* quant, act_t* image, act_t in_buf[2][kBanks][kInBankRows],
                      act_t stage[2][kBanks][kStageBankRows]) {
  int32_t q[3];
  read_quant(quant, d.quant_offset, 3, q);
  const uint32_t plane = d.out_h * d.out_w;
  const uint32_t block = d.out_c * plane;      // one image's bytes of each tensor's channel slice
  const uint32_t chunk = d.tile_r * d.tile_c;  // <= abi::kAddChunkBytes (abi::layer_fits)
  const uint32_t chunks = ceil_div(block, chunk);
  const uint32_t a = d.in_offset + d.in_channel_base * plane;
  const uint32_t b = d.in2_offset + d.in2_channel_base * plane;
  const uint32_t y = d.out_offset + d.out_channel_base * plane;
  add_read(image, a, add_chunk_count(0, chunk, block), in_buf[0], 0, 0);  // prologue
  add_read(image, b, add_chunk_count(0, chunk, block), in_buf[0], kAddBRow, kAddBRot);
add_chunks:
  for (uint32_t c = 0; c < chunks; ++c) {
#pragma HLS loop_tripcount min = 1 max = 1024 avg = 32
    if (c + 1 < chunks) {
      const uint32_t next = (c + 1) * chunk, count = add_chunk_count(c + 1, chunk, block);
      add_read(image, a + next, count, in_buf[(c + 1) & 1], 0, 0);
      add_read(image, b + next, count, in_buf[(c + 1) & 1], kAddBRow, kAddBRot);
    }
    if (c > 0) add_write(stage[(c - 1) & 1], chunk, image, y + (c - 1) * chunk);
    add_lanes(in_buf[c & 1], add_chunk_count(c, chunk, block), q, d, stage[c & 1]);
  }
  const uint32_t last = chunks - 1;
  add_write(stage[last & 1], add_chunk_count(last, chunk, block), image, y + last * chunk);  // epilogue
}

}  // namespace kernel
}  // namespace tessera
