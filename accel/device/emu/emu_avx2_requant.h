// AVX2 requantisation shared by emu_conv_avx2.cc and emu_conv_avxvnni.cc: vectorised in 64 bits,
// vpmuldq for acc * M, a logical shift with sign flips for the arithmetic >> S (AVX2 has no
// 64-bit arithmetic shift), vpcmpgtq for the clamp, in abi::requantize's order. The functions
// carry the avx2 target; a caller with a wider target (avx2 + avxvnni) may inline them.
#pragma once

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include <cstdint>

#define TESSERA_AVX2 __attribute__((target("avx2")))

namespace tessera::emu::avx2 {

// One output channel's requantisation constants, broadcast.
struct RequantVec {
  __m256i bias, multiplier, round, lo, hi;
  __m128i shift;
};

TESSERA_AVX2 inline RequantVec make_requant(int32_t bias, int32_t multiplier, int32_t shift, int32_t lo, int32_t hi) {
  RequantVec v;
  v.bias = _mm256_set1_epi32(bias);
  v.multiplier = _mm256_set1_epi32(multiplier);
  v.round = _mm256_set1_epi64x(static_cast<long long>(1) << (shift - 1));
  v.lo = _mm256_set1_epi64x(lo);
  v.hi = _mm256_set1_epi64x(hi);
  v.shift = _mm_cvtsi32_si128(shift);
  return v;
}

// (p + round) >> shift (arithmetic), then clamp as abi::requantize: p < lo ? lo : min(p, hi).
TESSERA_AVX2 inline __m256i round_shift_clamp(__m256i p, const RequantVec& q) {
  p = _mm256_add_epi64(p, q.round);
  const __m256i sign = _mm256_cmpgt_epi64(_mm256_setzero_si256(), p);
  p = _mm256_xor_si256(_mm256_srl_epi64(_mm256_xor_si256(p, sign), q.shift), sign);
  const __m256i upper = _mm256_blendv_epi8(p, q.hi, _mm256_cmpgt_epi64(p, q.hi));
  return _mm256_blendv_epi8(upper, q.lo, _mm256_cmpgt_epi64(q.lo, p));
}

// Eight int32 accumulators -> eight requantised int32 values (lane order kept).
TESSERA_AVX2 inline __m256i requantize8(__m256i acc, const RequantVec& q) {
  acc = _mm256_add_epi32(acc, q.bias);
  const __m256i even = round_shift_clamp(_mm256_mul_epi32(acc, q.multiplier), q);
  const __m256i odd = round_shift_clamp(_mm256_mul_epi32(_mm256_srli_epi64(acc, 32), q.multiplier), q);
  return _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
}

// Low bytes of two vectors of int32 (a: pixels 0-3, 8-11; b: 4-7, 12-15) as 16 int8 in pixel
// order. Masking to the low byte makes the narrowing a two's-complement wrap, as a C++ cast.
TESSERA_AVX2 inline __m128i narrow16(__m256i a, __m256i b) {
  const __m256i byte = _mm256_set1_epi32(0xFF);
  const __m256i words = _mm256_packus_epi32(_mm256_and_si256(a, byte), _mm256_and_si256(b, byte));
  const __m256i bytes = _mm256_packus_epi16(words, words);
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(bytes, 0x08));
}

}  // namespace tessera::emu::avx2

#endif
