// The AVX-512 implicit GEMMs' epilogue (emu_conv_vnni512.cc's implicit GEMM and the stem GEMM of
// emu_conv_stem_vnni512.cc): one output channel's 16 * Vecs int32 sums requantised into a row of
// int8 kept in a register, then one masked store per output segment. Functions carry their own
// AVX-512 target attribute; only those two files include this, and they run only where
// vnni512_kernels() found the CPU's avx512f, bw, vl and vnni.
//
// The narrowing: abi::requantize clamps the 64-bit (acc * M + round) >> S to [lo, hi] and the
// cast keeps the low byte; here each lane saturates to int8 first (vpmovsqb) and is clamped to
// [lo, hi] after, 64 bytes at once. The same bytes, because -128 <= lo <= hi <= 127 (the program
// check refuses other clamps): a value past int8 saturates to -128 or 127, which [lo, hi] then
// takes to lo or hi, as the clamp in 64 bits would.
#pragma once

#if defined(__x86_64__)

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "accel/device/emu/emu_kernels.h"
#include "accel/device/emu/emu_vnni_panel.h"

#define TESSERA_ROW_STORE512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

namespace tessera::emu::vnni {

// One output channel's requantisation constants, broadcast (the clamp is applied per row).
struct SaturatingRequant {
  __m512i bias, multiplier, round;
  __m128i shift;
};

// Sixteen int32 sums -> sixteen int8, saturated but not yet clamped to [lo, hi]: (acc + bias)
// (wrapping) times the multiplier in 64 bits, even and odd lanes apart, rounded and shifted as
// abi::requantize, narrowed with saturation and interleaved back into lane order.
TESSERA_ROW_STORE512 inline __m128i requantize16_saturated(__m512i acc, const SaturatingRequant& q) {
  // The zero-masked forms with every lane selected: GCC 12's unmasked ones start from an
  // "undefined" vector its -Wuninitialized flags here.
  constexpr __mmask8 kAll = 0xFF;
  acc = _mm512_add_epi32(acc, q.bias);
  const __m512i odd_lanes = _mm512_maskz_srli_epi64(kAll, acc, 32);
  const __m512i even =
      _mm512_maskz_sra_epi64(kAll, _mm512_add_epi64(_mm512_maskz_mul_epi32(kAll, acc, q.multiplier), q.round), q.shift);
  const __m512i odd = _mm512_maskz_sra_epi64(
      kAll, _mm512_add_epi64(_mm512_maskz_mul_epi32(kAll, odd_lanes, q.multiplier), q.round), q.shift);
  return _mm_unpacklo_epi8(_mm512_maskz_cvtsepi64_epi8(kAll, even), _mm512_maskz_cvtsepi64_epi8(kAll, odd));
}

// Requantises channel i's 16 * Vecs sums (its packed correction word added to the bias) and
// stores the segments' bytes of the row to `out`, channel i's output plane. The row's 64 bytes
// stay in a register: each segment is one masked store of it at out + offset - start, the mask
// selecting bytes [start, start + len), so out + offset - start may lie up to 63 bytes before the
// plane, where only masked-off bytes fall (neither written nor faulted on). Going through a buffer
// in memory stalled every row: a 64-byte load of bytes just written by four 16-byte stores is not
// forwarded.
template <int Vecs>
TESSERA_ROW_STORE512 inline void store_requantized_row(const RequantParams& p, uint32_t i, int32_t correction,
                                                       const int32_t* sums, int8_t* out, const Segment* segments,
                                                       uint32_t count) {
  const SaturatingRequant rq{_mm512_set1_epi32(wrap_add(p.bias[i], correction)), _mm512_set1_epi32(p.multiplier[i]),
                             _mm512_set1_epi64(static_cast<long long>(1) << (p.shift[i] - 1)),
                             _mm_cvtsi32_si128(p.shift[i])};
  __m512i line = _mm512_castsi128_si512(requantize16_saturated(_mm512_load_si512(sums), rq));
  if constexpr (Vecs > 1) line = _mm512_inserti32x4(line, requantize16_saturated(_mm512_load_si512(sums + 16), rq), 1);
  if constexpr (Vecs > 2) line = _mm512_inserti32x4(line, requantize16_saturated(_mm512_load_si512(sums + 32), rq), 2);
  if constexpr (Vecs > 3) line = _mm512_inserti32x4(line, requantize16_saturated(_mm512_load_si512(sums + 48), rq), 3);
  line = _mm512_max_epi8(_mm512_min_epi8(line, _mm512_set1_epi8(static_cast<char>(p.hi))),
                         _mm512_set1_epi8(static_cast<char>(p.lo)));
  for (uint32_t k = 0; k < count; ++k) {
    const Segment& seg = segments[k];
    const __mmask64 mask = seg.len >= 64 ? ~0ull : ((1ull << seg.len) - 1) << seg.start;
    _mm512_mask_storeu_epi8(out + (static_cast<ptrdiff_t>(seg.offset) - seg.start), mask, line);
  }
}

}  // namespace tessera::emu::vnni

#undef TESSERA_ROW_STORE512

#endif
