// accel_pack.h — two int8 products from one DSP48E2 multiplication (Xilinx WP486 packing).
//
// Two int8 operands x_hi, x_lo that multiply the same int8 operand s are packed into the
// multiplier's 27-bit port as X = x_hi * 2^18 + x_lo (x_lo sign-extended: the DSP48E2's pre-adder
// computes A + D with A = x_hi << 18 and D = x_lo), s goes into the 18-bit port, and the 45-bit
// product is
//     P = X * s = (x_hi * s) * 2^18 + x_lo * s.
// Exactness: |x_lo * s| <= 128 * 128 = 2^14 < 2^17, so the low product is the low 18 bits of P read
// as a signed 18-bit number: lo = sext18(P[17:0]) = x_lo * s. The upper field P >> 18 (arithmetic)
// is floor(P / 2^18) = x_hi * s + floor(x_lo * s / 2^18), i.e. x_hi * s, less one when the low
// product is negative; the low field's sign is bit 17 of P, so hi = (P >> 18) + P[17] = x_hi * s.
// Widths: |X| <= 128 * 2^18 + 128 < 2^26 (27 bits signed), |P| < 2^33 (45 bits hold it).
// tests/unit/kernels/test_kernel_csim_pack.cc checks mul_pair() against two plain products for all
// 2^24 (x_hi, x_lo, s) triples.
//
// Where the array uses it (TESSERA_INT8_PACK = 1, the board profile's int8_macs_per_dsp = 2):
// mac_pixels pairs lanes 2i and 2i + 1 (their weights share the pixel's activation vec[j]);
// mac_pixels_spread pairs lanes m and m + 32 (the two pixels' activations share lane m's weight).
// The DSP48E1 boards (zc702, zc706: a 25 x 18 multiplier, no room for a second 8-bit field above
// 18 bits plus guard) build with TESSERA_INT8_PACK = 0: one product per multiplier.
#pragma once

#include <cstdint>

#ifdef __SYNTHESIS__
#include <ap_int.h>
#endif

#ifndef TESSERA_INT8_PACK
#define TESSERA_INT8_PACK 1
#endif

namespace tessera {
namespace kernel {

// The low field's width: the second operand's product sits in P[17:0] (WP486).
constexpr int kPackShift = 18;
constexpr int32_t kPackScale = int32_t{1} << kPackShift;

#ifdef __SYNTHESIS__
// The DSP48E2's ports as HLS sees them: 27-bit pre-adder output, 18-bit B port, 45-bit product.
using pack_x_t = ap_int<27>;
using pack_s_t = ap_int<18>;
using pack_p_t = ap_int<45>;
constexpr int kPackProductBits = 45;
#else
// C simulation (plain g++, no ap_int): the same values in wider built-in types; the exhaustive
// test proves every value stays within the synthesised widths' results.
using pack_x_t = int32_t;
using pack_s_t = int32_t;
using pack_p_t = int64_t;
constexpr int kPackProductBits = 64;
#endif

struct ProductPair {
  int32_t hi;  // x_hi * s
  int32_t lo;  // x_lo * s
};

// x_hi * s and x_lo * s from one 27 x 18 multiplication (one DSP48E2: pre-adder + multiplier).
inline ProductPair mul_pair(int8_t x_hi, int8_t x_lo, int8_t s) {
  const pack_x_t packed = pack_x_t(x_hi) * pack_x_t(kPackScale) + pack_x_t(x_lo);  // pre-adder A + D
  const pack_p_t p = pack_p_t(packed) * pack_p_t(pack_s_t(s));
#ifdef __SYNTHESIS__  // (so the unit test, built without -Wno-unknown-pragmas, can include this header)
#pragma HLS bind_op variable = p op = mul impl = dsp
#endif
  // Low field: P[17:0] sign-extended (shift up to the top, arithmetic shift back down).
  const pack_p_t lo = (p << (kPackProductBits - kPackShift)) >> (kPackProductBits - kPackShift);
  // Upper field plus the low field's sign (P[17]): the borrow the negative low product took.
  const pack_p_t hi = (p >> kPackShift) + ((p >> (kPackShift - 1)) & 1);
  return {static_cast<int32_t>(hi), static_cast<int32_t>(lo)};
}

}  // namespace kernel
}  // namespace tessera
