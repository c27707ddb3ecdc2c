// accel_add.h — element-wise add of two int8 tensors (kOpAdd: ResNet / MobileNet shortcuts):
// y = requantize_add(a, b, M_a, M_b, S, act_lo, act_hi) with {M_a, M_b, S} at quant_offset.
// a, b and y are out_c x out_h x out_w channel slices (in_channel_base, in2_channel_base,
// out_channel_base) of their tensors; both inputs have the output's shape.
//
// Schedule: the requantisation is per tensor ({M_a, M_b, S} for every element), and one image's
// out_c channels of a tensor are one contiguous block of out_c x out_h x out_w bytes in CHW (a
// channel slice [base, base + out_c) too). So the three blocks stream flat, in chunks of up to
// tile_r x tile_c bytes (at most kChunkElems, the on-chip buffers), through a DATAFLOW region:
// load_pair (two read runs) -> add_store (requantise, one write run), with ping-pong channels
// between them. Channel planes play no part: a 7x7 plane costs no more DMA calls than a 56x56 one.
// A chunk is read completely before it is written, so an in-place add (out_offset == in_offset,
// same channel slice) is safe.
#pragma once

#include <cstdint>

#include "kernels/accel_common.h"

namespace tessera {
namespace kernel {

// Dataflow producer: both inputs of one chunk into on-chip buffers.
static void load_pair(const act_t* a, const act_t* b, uint32_t count, act_t a_buf[kChunkElems],
                      act_t b_buf[kChunkElems]) {
add_read_a:
  for (uint32_t i = 0; i < count; ++i) {
#pragma HLS pipeline II = 1
#pragma HLS loop_tripcount min = 1 max = 4096 avg = 1024
    a_buf[i] = a[i];
  }
add_read_b:
  for (uint32_t i = 0; i < count; ++i) {
#pragma HLS pipeline II = 1
#pragma HLS loop_tripcount min = 1 max = 4096 avg = 1024
    b_buf[i] = b[i];
  }
}

// Dataflow consumer: requantised sum of one chunk, written back to DDR.
static void add_store(const act_t a_buf[kChunkElems], const act_t b_buf[kChunkElems], uint32_t count, int32_t mult_a,
                      int32_t mult_b, int32_t shift, int32_t lo, int32_t hi, act_t* y) {
add_write:
  for (uint32_t i = 0; i < count; ++i) {
#pragma HLS pipeline II = 1
#pragma HLS loop_tripcount min = 1 max = 4096 avg = 1024
    y[i] = static_cast<act_t>(abi::requantize_add(a_buf[i], b_buf[i], mult_a, mult_b, shift, lo, hi));
  }
}

static void add_chunk(const act_t* a, const act_t* b, act_t* y, uint32_t count, int32_t mult_a, int32_t mult_b,
                      int32_t shift, int32_t lo, int32_t hi) {
#pragma HLS dataflow
  act_t a_buf[kChunkElems], b_buf[kChunkElems];
  load_pair(a, b, count, a_buf, b_buf);
  add_store(a_buf, b_buf, count, mult_a, mult_b, shift, lo, hi, y);
}

static void add_layer(const abi::LayerDesc& d, const int32_t* quant, act_t* image) {
  const int32_t mult_a = quant[d.quant_offset];
  const int32_t mult_b = quant[d.quant_offset + 1];
  const int32_t shift = quant[d.quant_offset + 2];
  const uint32_t plane = d.out_h * d.out_w;
  const uint32_t block = d.out_c * plane;      // one image's bytes of each tensor's channel slice
  const uint32_t chunk = d.tile_r * d.tile_c;  // <= kChunkElems (abi::layer_fits)
  const act_t* a = image + d.in_offset + d.in_channel_base * plane;
  const act_t* b = image + d.in2_offset + d.in2_channel_base * plane;
  act_t* y = image + d.out_offset + d.out_channel_base * plane;
add_chunks:
  for (uint32_t p0 = 0; p0 < block; p0 += chunk) {
#pragma HLS loop_tripcount min = 1 max = 1024 avg = 32
    add_chunk(a + p0, b + p0, y + p0, min_u32(chunk, block - p0), mult_a, mult_b, shift, d.act_lo, d.act_hi);
  }
}

}  // namespace kernel
}  // namespace tessera
