// AVX2 inner loops. Only the functions marked TESSERA_AVX2 use AVX2 instructions (no file-wide
// flags, so no AVX2 code leaks into shared inline functions); emu_kernels() calls them only
// when the CPU reports AVX2.
//
// GEMM: int8 operands are widened to int16 and multiplied with vpmaddwd, which sums adjacent
// pairs of int16 products into int32 lanes: |w * x| <= 2^14, so a pair sum never leaves int32
// and the result is exact (vpmaddubsw would saturate int16 pair sums, so it is not used).
// Weights come packed as int16 pairs per channel (pack_weights); a panel of 16 output pixels is
// widened once into [k / 2][16 pixels][pair] and reused by every channel block. A 6 x 16
// micro-kernel keeps 12 accumulators in registers. Requantisation is vectorised in 64 bits:
// vpmuldq for acc * M, a logical shift with sign flips for the arithmetic >> S (AVX2 has no
// 64-bit arithmetic shift), vpcmpgtq for the clamp, in abi::requantize's order.
#include "accel/device/emu/emu_kernels.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include <cstring>
#include <vector>

#include "kernels/kernel_abi.h"

#define TESSERA_AVX2 __attribute__((target("avx2")))

namespace tessera::emu {
namespace {

// One output channel's requantisation constants, broadcast.
struct RequantVec {
  __m256i bias, multiplier, round, lo, hi;
  __m128i shift;
};

TESSERA_AVX2 inline RequantVec make_requant(int32_t bias, int32_t multiplier, int32_t shift, int32_t lo,
                                            int32_t hi) {
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

// Widens 16 pixels of every im2col row pair into panel[p] = {x[2p][j], x[2p + 1][j]} pairs,
// laid out as two vectors per pair: pixels 0-3, 8-11 then 4-7, 12-15 (unpack's lane order).
TESSERA_AVX2 void widen_panel(const int8_t* col, size_t stride, uint32_t pairs, int16_t* panel) {
  for (uint32_t p = 0; p < pairs; ++p) {
    const int8_t* r0 = col + 2 * p * stride;
    const __m256i x0 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r0)));
    const __m256i x1 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r0 + stride)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(panel + 32 * p), _mm256_unpacklo_epi16(x0, x1));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(panel + 32 * p + 16), _mm256_unpackhi_epi16(x0, x1));
  }
}

// Rows x 16 block: sums over all pairs, requantises and stores `valid` pixels per channel.
template <int Rows>
TESSERA_AVX2 void micro_kernel(const GemmArgs& g, const int32_t* a, const int16_t* panel, uint32_t pairs,
                               uint32_t m0, uint32_t n0, uint32_t valid) {
  __m256i acc[Rows][2];
  for (int r = 0; r < Rows; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
  for (uint32_t p = 0; p < pairs; ++p) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + 32 * p));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + 32 * p + 16));
    for (int r = 0; r < Rows; ++r) {
      const __m256i w = _mm256_set1_epi32(a[p * Rows + r]);
      acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(w, b0));
      acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(w, b1));
    }
  }
  for (int r = 0; r < Rows; ++r) {
    const uint32_t i = m0 + r;
    const RequantVec q = make_requant(g.q.bias[i], g.q.multiplier[i], g.q.shift[i], g.q.lo, g.q.hi);
    const __m128i bytes = narrow16(requantize8(acc[r][0], q), requantize8(acc[r][1], q));
    int8_t* out = g.out + i * g.out_stride + n0;
    if (valid == kGemmPanel) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out), bytes);
    } else {
      alignas(16) int8_t tmp[kGemmPanel];
      _mm_store_si128(reinterpret_cast<__m128i*>(tmp), bytes);
      std::memcpy(out, tmp, valid);
    }
  }
}

TESSERA_AVX2 void gemm_avx2(const GemmArgs& g) {
  const uint32_t pairs = (g.k + 1) / 2;
  thread_local std::vector<int16_t> panel;
  if (panel.size() < static_cast<size_t>(pairs) * 32) panel.resize(static_cast<size_t>(pairs) * 32);
  for (uint32_t n0 = 0; n0 < g.n; n0 += kGemmPanel) {
    const uint32_t valid = g.n - n0 < kGemmPanel ? g.n - n0 : kGemmPanel;
    widen_panel(g.col + n0, g.col_stride, pairs, panel.data());
    for (uint32_t m0 = 0; m0 < g.m; m0 += kGemmRows) {
      const int32_t* a = g.packed + static_cast<size_t>(m0) * pairs;
      switch (g.m - m0 < kGemmRows ? g.m - m0 : kGemmRows) {
        case 6: micro_kernel<6>(g, a, panel.data(), pairs, m0, n0, valid); break;
        case 5: micro_kernel<5>(g, a, panel.data(), pairs, m0, n0, valid); break;
        case 4: micro_kernel<4>(g, a, panel.data(), pairs, m0, n0, valid); break;
        case 3: micro_kernel<3>(g, a, panel.data(), pairs, m0, n0, valid); break;
        case 2: micro_kernel<2>(g, a, panel.data(), pairs, m0, n0, valid); break;
        default: micro_kernel<1>(g, a, panel.data(), pairs, m0, n0, valid); break;
      }
    }
  }
}

TESSERA_AVX2 void requantize_row_avx2(const int32_t* acc, uint32_t n, int32_t bias, int32_t multiplier,
                                      int32_t shift, int32_t lo, int32_t hi, int8_t* out) {
  const RequantVec q = make_requant(bias, multiplier, shift, lo, hi);
  uint32_t j = 0;
  for (; j + 16 <= n; j += 16) {
    // narrow16 expects pixels 0-3, 8-11 in the first vector and 4-7, 12-15 in the second.
    const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + j));
    const __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + j + 8));
    const __m256i a = _mm256_permute2x128_si256(x0, x1, 0x20);
    const __m256i b = _mm256_permute2x128_si256(x0, x1, 0x31);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j), narrow16(requantize8(a, q), requantize8(b, q)));
  }
  for (; j < n; ++j) out[j] = static_cast<int8_t>(abi::requantize(wrap_add(acc[j], bias), multiplier, shift, lo, hi));
}

}  // namespace

const EmuKernels* avx2_kernels() {
  static const EmuKernels kernels{"AVX2", true, &gemm_avx2, &requantize_row_avx2};
  return __builtin_cpu_supports("avx2") ? &kernels : nullptr;
}

}  // namespace tessera::emu

#else  // not x86

namespace tessera::emu {
const EmuKernels* avx2_kernels() { return nullptr; }
}  // namespace tessera::emu

#endif
