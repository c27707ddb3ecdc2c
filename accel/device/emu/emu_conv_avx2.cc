// AVX2 inner loops. Only the functions marked TESSERA_AVX2 use AVX2 instructions (no file-wide
// flags, so no AVX2 code leaks into shared inline functions); emu_kernels() calls them only
// when the CPU reports AVX2.
//
// GEMM: int8 operands are widened to int16 and multiplied with vpmaddwd, which sums adjacent
// pairs of int16 products into int32 lanes: |w * x| <= 2^14, so a pair sum never leaves int32
// and the result is exact (vpmaddubsw would saturate int16 pair sums, so it is not used).
// Weights come packed as int16 pairs per channel (pack_weights); a panel of 16 output pixels is
// widened once into [k / 2][16 pixels][pair] and reused by every channel block. A 6 x 16
// micro-kernel keeps 12 accumulators in registers. Requantisation: emu_avx2_requant.h.
#include "accel/device/emu/emu_kernels.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include <cstring>
#include <vector>

#include "accel/device/emu/emu_avx2_requant.h"
#include "kernels/kernel_abi.h"

namespace tessera::emu {
namespace {

using avx2::make_requant;
using avx2::narrow16;
using avx2::requantize8;
using avx2::RequantVec;

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

// acc += w (broadcast pair) x b for both pixel halves, when row R exists. R is pasted into names.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define TESSERA_MAC_ROW(R)                                             \
  if constexpr (Rows > R) {                                            \
    const __m256i w = _mm256_set1_epi32(a[p * Rows + R]);              \
    acc##R##0 = _mm256_add_epi32(acc##R##0, _mm256_madd_epi16(w, b0)); \
    acc##R##1 = _mm256_add_epi32(acc##R##1, _mm256_madd_epi16(w, b1)); \
  }
// NOLINTEND(bugprone-macro-parentheses)

// Rows x 16 block: sums over all pairs, requantises and stores `valid` pixels per channel. The
// accumulators are named variables (an indexed array makes GCC keep them on the stack).
template <int Rows>
TESSERA_AVX2 void micro_kernel(const GemmArgs& g, const int32_t* a, const int16_t* panel, uint32_t pairs, uint32_t m0,
                               uint32_t n0, uint32_t valid) {
  __m256i acc00 = _mm256_setzero_si256(), acc01 = acc00, acc10 = acc00, acc11 = acc00, acc20 = acc00, acc21 = acc00,
          acc30 = acc00, acc31 = acc00, acc40 = acc00, acc41 = acc00, acc50 = acc00, acc51 = acc00;
  for (uint32_t p = 0; p < pairs; ++p) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + 32 * p));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + 32 * p + 16));
    TESSERA_MAC_ROW(0)
    TESSERA_MAC_ROW(1)
    TESSERA_MAC_ROW(2)
    TESSERA_MAC_ROW(3)
    TESSERA_MAC_ROW(4)
    TESSERA_MAC_ROW(5)
  }
  const __m256i acc[6][2] = {{acc00, acc01}, {acc10, acc11}, {acc20, acc21},
                             {acc30, acc31}, {acc40, acc41}, {acc50, acc51}};
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

#undef TESSERA_MAC_ROW

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

// 16 pixels per step: int8 -> int16, one vpmullw (|w * x| <= 2^14 fits int16), widened to int32.
TESSERA_AVX2 void mac_row_avx2(uint32_t* acc, const int8_t* x, int32_t w, uint32_t n) {
  const __m256i wv = _mm256_set1_epi16(static_cast<int16_t>(w));
  uint32_t j = 0;
  for (; j + 16 <= n; j += 16) {
    const __m256i xv = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + j)));
    const __m256i prod = _mm256_mullo_epi16(xv, wv);
    __m256i* a = reinterpret_cast<__m256i*>(acc + j);
    const __m256i lo = _mm256_cvtepi16_epi32(_mm256_castsi256_si128(prod));
    const __m256i hi = _mm256_cvtepi16_epi32(_mm256_extracti128_si256(prod, 1));
    _mm256_storeu_si256(a, _mm256_add_epi32(_mm256_loadu_si256(a), lo));
    _mm256_storeu_si256(a + 1, _mm256_add_epi32(_mm256_loadu_si256(a + 1), hi));
  }
  for (; j < n; ++j) acc[j] += static_cast<uint32_t>(w * x[j]);
}

// Sum over taps of w[t] * src[t][j .. j + 16), in pixel order (lo: 0-7, hi: 8-15). Two taps at a
// time: their int8 rows widened and interleaved, one vpmaddwd per 8 pixels with the
// (w[t], w[t + 1]) pair, the accumulators in registers over all taps.
TESSERA_AVX2 inline void tap_sums16(const int8_t* const* src, const int32_t* pairs, uint32_t taps, uint32_t j,
                                    __m256i& lo, __m256i& hi) {
  __m256i a0 = _mm256_setzero_si256(), a1 = _mm256_setzero_si256();  // pixels 0-3, 8-11 / 4-7, 12-15
  for (uint32_t t = 0; t < taps; t += 2) {
    const __m256i x0 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src[t] + j)));
    const __m256i x1 = t + 1 < taps
                           ? _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src[t + 1] + j)))
                           : _mm256_setzero_si256();
    const __m256i wp = _mm256_set1_epi32(pairs[t / 2]);
    a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(_mm256_unpacklo_epi16(x0, x1), wp));
    a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(_mm256_unpackhi_epi16(x0, x1), wp));
  }
  lo = _mm256_permute2x128_si256(a0, a1, 0x20);
  hi = _mm256_permute2x128_si256(a0, a1, 0x31);
}

TESSERA_AVX2 void mac_taps_avx2(uint32_t* acc, const int8_t* const* src, const int32_t* w, uint32_t taps, uint32_t n) {
  int32_t pairs[(kMaxTaps + 1) / 2];
  for (uint32_t t = 0; t < taps; t += 2) {
    const uint32_t lo = static_cast<uint16_t>(static_cast<int16_t>(w[t]));
    const uint32_t hi = t + 1 < taps ? static_cast<uint16_t>(static_cast<int16_t>(w[t + 1])) : 0;
    pairs[t / 2] = static_cast<int32_t>(lo | (hi << 16));
  }
  uint32_t j = 0;
  __m256i lo, hi;
  for (; j + 16 <= n; j += 16) {
    tap_sums16(src, pairs, taps, j, lo, hi);
    __m256i* out = reinterpret_cast<__m256i*>(acc + j);
    _mm256_storeu_si256(out, _mm256_add_epi32(_mm256_loadu_si256(out), lo));
    _mm256_storeu_si256(out + 1, _mm256_add_epi32(_mm256_loadu_si256(out + 1), hi));
  }
  if (j == n) return;
  if (n >= 16) {
    // Tail: the last 16 pixels again (rows are readable there), adding only the new ones.
    alignas(32) uint32_t sums[16];
    tap_sums16(src, pairs, taps, n - 16, lo, hi);
    _mm256_store_si256(reinterpret_cast<__m256i*>(sums), lo);
    _mm256_store_si256(reinterpret_cast<__m256i*>(sums + 8), hi);
    for (uint32_t k = j - (n - 16); k < 16; ++k) acc[n - 16 + k] += sums[k];
    return;
  }
  for (; j < n; ++j) {
    uint32_t sum = 0;
    for (uint32_t t = 0; t < taps; ++t) sum += static_cast<uint32_t>(w[t] * src[t][j]);
    acc[j] += sum;
  }
}

TESSERA_AVX2 void requantize_row_avx2(const int32_t* acc, uint32_t n, int32_t bias, int32_t multiplier, int32_t shift,
                                      int32_t lo, int32_t hi, int8_t* out) {
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

// 32 bytes per step (vpmaxsb), the tail in scalar.
TESSERA_AVX2 void max_row_avx2(int8_t* acc, const int8_t* x, uint32_t n) {
  uint32_t j = 0;
  for (; j + 32 <= n; j += 32) {
    __m256i* a = reinterpret_cast<__m256i*>(acc + j);
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + j));
    _mm256_storeu_si256(a, _mm256_max_epi8(_mm256_loadu_si256(a), v));
  }
  max_row_scalar(acc + j, x + j, n - j);
}

// Eight elements of y = requantize_add(a, b, ...) as int32 lanes in order: the 64-bit sums of
// a * M_a + b * M_b (vpmuldq on even and odd lanes) through round_shift_clamp.
TESSERA_AVX2 inline __m256i add8(const int8_t* a, const int8_t* b, __m256i multiplier_a, __m256i multiplier_b,
                                 const RequantVec& q) {
  const __m256i a32 = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(a)));
  const __m256i b32 = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b)));
  const __m256i even = _mm256_add_epi64(_mm256_mul_epi32(a32, multiplier_a), _mm256_mul_epi32(b32, multiplier_b));
  const __m256i odd = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(a32, 32), multiplier_a),
                                       _mm256_mul_epi32(_mm256_srli_epi64(b32, 32), multiplier_b));
  return _mm256_blend_epi32(avx2::round_shift_clamp(even, q), _mm256_slli_epi64(avx2::round_shift_clamp(odd, q), 32),
                            0xAA);
}

// 16 elements per step (the residual adds of ResNet and MobileNetV2), the tail in scalar. Each
// step reads its a and b before it writes y, so y may be a or b.
TESSERA_AVX2 void add_row_avx2(const int8_t* a, const int8_t* b, uint32_t n, int32_t multiplier_a, int32_t multiplier_b,
                               int32_t shift, int32_t lo, int32_t hi, int8_t* y) {
  const RequantVec q = make_requant(0, 0, shift, lo, hi);
  const __m256i ma = _mm256_set1_epi32(multiplier_a), mb = _mm256_set1_epi32(multiplier_b);
  uint32_t j = 0;
  for (; j + 16 <= n; j += 16) {
    const __m256i x0 = add8(a + j, b + j, ma, mb, q), x1 = add8(a + j + 8, b + j + 8, ma, mb, q);
    // narrow16 wants elements 0-3, 8-11 then 4-7, 12-15.
    const __m256i lo4 = _mm256_permute2x128_si256(x0, x1, 0x20), hi4 = _mm256_permute2x128_si256(x0, x1, 0x31);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + j), narrow16(lo4, hi4));
  }
  add_row_scalar(a + j, b + j, n - j, multiplier_a, multiplier_b, shift, lo, hi, y + j);
}

}  // namespace

const EmuKernels* avx2_kernels() {
  static const EmuKernels kernels{.id = "avx2",
                                  .name = "AVX2",
                                  .pack = &pack_weights,
                                  .packed_words = &packed_weight_words,
                                  .gemm_rows = kGemmRows,
                                  .gemm = &gemm_avx2,
                                  .mac_row = &mac_row_avx2,
                                  .mac_taps = &mac_taps_avx2,
                                  .requantize_row = &requantize_row_avx2,
                                  .max_row = &max_row_avx2,
                                  .add_row = &add_row_avx2};
  return __builtin_cpu_supports("avx2") ? &kernels : nullptr;
}

}  // namespace tessera::emu

#else  // not x86

namespace tessera::emu {
const EmuKernels* avx2_kernels() { return nullptr; }
}  // namespace tessera::emu

#endif
