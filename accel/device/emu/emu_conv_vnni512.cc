// The AVX-512 VNNI GEMMs (vpdpbusd on 512-bit vectors: im2col panels and the implicit GEMM), the
// direct conv's taps (vpdpwssd), requantise-a-row, the residual add and the max pool's rows on
// 512-bit vectors; the average pool's sums are AVX2's. Only functions marked TESSERA_VNNI512 use
// AVX-512, and vnni512_kernels() offers them only when the CPU reports avx512f, bw, vl and vnni.
//
// Exactness: vpdpbusd (not vpdpbusds) adds four u8 x s8 products to an int32 lane with
// two's-complement wrap; a sum of four products (|.| < 2^17) cannot overflow before that add.
// Activations go in as x + 128 (emu_vnni_panel.h) and each channel's -128 * sum(w) word
// (pack_weights_quads) is added with the bias, so every lane ends at sum w * x + bias modulo 2^32,
// the accelerator's int32 accumulator. The micro-kernel is 6 channels x 64 pixels (24 zmm
// accumulators, 4 panel vectors, one broadcast weight quad). In a loop from L1 it is load-bound
// (416 GMAC/s a core, against 530 for vpdpbusd alone; a broadcast costs nothing, a 512-bit load
// does) and 12 channels x 32 pixels (2 loads, 12 broadcasts) reaches 535; in ResNet-18's layers
// that shape was 2-5% slower (2026-11-28, interleaved runs), so 6 x 64 stays. Requantisation uses AVX-512's
// 64-bit arithmetic shift and min, in abi::requantize's order; the implicit GEMM's rows saturate to int8
// first and clamp after, the same bytes (emu_vnni512_row_store.h, shared with the stem GEMM).
#include "accel/device/emu/emu_kernels.h"
#include "accel/device/emu/emu_quad_source.h"

#if defined(__x86_64__)

#include "accel/common/x86_simd_support.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "accel/device/emu/emu_vnni512_row_store.h"
#include "accel/device/emu/emu_vnni_panel.h"

#define TESSERA_VNNI512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

namespace tessera::emu {
namespace {

// Pixels of one panel: 4 vectors of 16.
constexpr uint32_t kVectors = 4;

// (p + round) >> shift (arithmetic), then p < lo ? lo : min(p, hi), on 8 int64 lanes.
TESSERA_VNNI512 inline __m512i round_shift_clamp(__m512i p, __m512i round, __m128i shift, __m512i lo, __m512i hi) {
  p = _mm512_sra_epi64(_mm512_add_epi64(p, round), shift);
  return _mm512_mask_mov_epi64(_mm512_min_epi64(p, hi), _mm512_cmpgt_epi64_mask(lo, p), lo);
}

// One output channel's requantisation constants, broadcast.
struct Requant512 {
  __m512i bias, multiplier, round, lo, hi;
  __m128i shift;
};

TESSERA_VNNI512 inline Requant512 make_requant(int32_t bias, int32_t multiplier, int32_t shift, int32_t lo,
                                               int32_t hi) {
  return {_mm512_set1_epi32(bias),
          _mm512_set1_epi32(multiplier),
          _mm512_set1_epi64(static_cast<long long>(1) << (shift - 1)),
          _mm512_set1_epi64(lo),
          _mm512_set1_epi64(hi),
          _mm_cvtsi32_si128(shift)};
}

// Sixteen int32 accumulators -> sixteen int8 (acc + bias wraps, as wrap_add; the narrowing
// truncates, as the C++ cast of a value clamped to int32).
TESSERA_VNNI512 inline __m128i requantize16(__m512i acc, const Requant512& q) {
  acc = _mm512_add_epi32(acc, q.bias);
  const __m512i even = round_shift_clamp(_mm512_mul_epi32(acc, q.multiplier), q.round, q.shift, q.lo, q.hi);
  const __m512i odd =
      round_shift_clamp(_mm512_mul_epi32(_mm512_srli_epi64(acc, 32), q.multiplier), q.round, q.shift, q.lo, q.hi);
  return _mm512_cvtepi32_epi8(_mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32)));
}

// acc += the four u8 x s8 products of each lane of b and w, wrapping (vpdpbusd). In assembly:
// GCC 12's pattern for the intrinsic only ties the accumulator to zmm0-15, and with more
// accumulators it copies them in and out of zmm16-31 (and spills) every step.
TESSERA_VNNI512 inline void dpbusd(__m512i& acc, __m512i b, __m512i w) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(b), "v"(w));
}

// acc RV += panel vector V x the broadcast weight quad of row R, when both exist. R and V are
// pasted into names.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define TESSERA_DP(R, V) \
  if constexpr (Rows > R && Vecs > V) dpbusd(acc##R##V, b##V, w);
#define TESSERA_DP_ROW(R)                                               \
  if constexpr (Rows > R) {                                             \
    const __m512i w = _mm512_set1_epi32(a[q * Rows + R]);               \
    TESSERA_DP(R, 0) TESSERA_DP(R, 1) TESSERA_DP(R, 2) TESSERA_DP(R, 3) \
  }
#define TESSERA_SAVE(R, V) \
  if constexpr (Rows > R && Vecs > V) _mm512_store_si512(sums[R] + 16 * V, acc##R##V);
#define TESSERA_SAVE_ROW(R) TESSERA_SAVE(R, 0) TESSERA_SAVE(R, 1) TESSERA_SAVE(R, 2) TESSERA_SAVE(R, 3)
#define TESSERA_LOAD(V) \
  if constexpr (Vecs > V) b##V = _mm512_loadu_si512(p + 64 * V);
// NOLINTEND(bugprone-macro-parentheses)

// Rows x (16 * Vecs) block over all quads; stores `valid` pixels per channel. The accumulators
// are named variables (GCC keeps an indexed array of them on the stack).
template <int Rows, int Vecs>
TESSERA_VNNI512 void micro_kernel(const GemmArgs& g, const int32_t* a, const uint8_t* panel, uint32_t quads,
                                  uint32_t m0, uint32_t n0, uint32_t valid) {
  __m512i acc00 = _mm512_setzero_si512(), acc01 = acc00, acc02 = acc00, acc03 = acc00, acc10 = acc00, acc11 = acc00,
          acc12 = acc00, acc13 = acc00, acc20 = acc00, acc21 = acc00, acc22 = acc00, acc23 = acc00, acc30 = acc00,
          acc31 = acc00, acc32 = acc00, acc33 = acc00, acc40 = acc00, acc41 = acc00, acc42 = acc00, acc43 = acc00,
          acc50 = acc00, acc51 = acc00, acc52 = acc00, acc53 = acc00;
  __m512i b0 = acc00, b1 = acc00, b2 = acc00, b3 = acc00;
  for (uint32_t q = 0; q < quads; ++q) {
    const uint8_t* p = panel + static_cast<size_t>(q) * Vecs * 64;
    TESSERA_LOAD(0)
    TESSERA_LOAD(1)
    TESSERA_LOAD(2)
    TESSERA_LOAD(3)
    TESSERA_DP_ROW(0)
    TESSERA_DP_ROW(1)
    TESSERA_DP_ROW(2)
    TESSERA_DP_ROW(3)
    TESSERA_DP_ROW(4)
    TESSERA_DP_ROW(5)
  }
  // The sums go through memory once, so the requantisation below does not hold 24 live registers.
  alignas(64) int32_t sums[6][64];
  TESSERA_SAVE_ROW(0)
  TESSERA_SAVE_ROW(1)
  TESSERA_SAVE_ROW(2)
  TESSERA_SAVE_ROW(3)
  TESSERA_SAVE_ROW(4)
  TESSERA_SAVE_ROW(5)
  const int32_t* correction = a + static_cast<size_t>(quads) * Rows;
#pragma GCC unroll 8
  for (int r = 0; r < Rows; ++r) {
    const uint32_t i = m0 + r;
    const Requant512 rq =
        make_requant(wrap_add(g.q.bias[i], correction[r]), g.q.multiplier[i], g.q.shift[i], g.q.lo, g.q.hi);
    int8_t* out = g.out + i * g.out_stride + n0;
#pragma GCC unroll 4
    for (int v = 0; v < Vecs; ++v) {
      const __m128i bytes = requantize16(_mm512_load_si512(sums[r] + 16 * v), rq);
      const uint32_t left = valid - 16 * v;
      if (left >= 16) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 16 * v), bytes);
      } else {
        _mm_mask_storeu_epi8(out + 16 * v, static_cast<__mmask16>((1u << left) - 1), bytes);
      }
    }
  }
}

// Rows x (16 * Vecs) pixels of an implicit GEMM over all taps and quads, the first pixel's quad 0
// (before the tap offset) at `base`; stores the segments' pixels of each channel.
template <int Rows, int Vecs>
TESSERA_VNNI512 void implicit_kernel(const ImplicitArgs& g, const int32_t* a, uint32_t m0, const uint8_t* base,
                                     int8_t* image_out, const vnni::Segment* segments, uint32_t count) {
  __m512i acc00 = _mm512_setzero_si512(), acc01 = acc00, acc02 = acc00, acc03 = acc00, acc10 = acc00, acc11 = acc00,
          acc12 = acc00, acc13 = acc00, acc20 = acc00, acc21 = acc00, acc22 = acc00, acc23 = acc00, acc30 = acc00,
          acc31 = acc00, acc32 = acc00, acc33 = acc00, acc40 = acc00, acc41 = acc00, acc42 = acc00, acc43 = acc00,
          acc50 = acc00, acc51 = acc00, acc52 = acc00, acc53 = acc00;
  __m512i b0 = acc00, b1 = acc00, b2 = acc00, b3 = acc00;
  uint32_t q = 0;
  for (uint32_t t = 0; t < g.taps; ++t) {
    const uint8_t* p = base + g.tap_offset[t];
    for (uint32_t c = 0; c < g.quads_per_tap; ++c, ++q, p += g.quad_stride) {
      TESSERA_LOAD(0)
      TESSERA_LOAD(1)
      TESSERA_LOAD(2)
      TESSERA_LOAD(3)
      TESSERA_DP_ROW(0)
      TESSERA_DP_ROW(1)
      TESSERA_DP_ROW(2)
      TESSERA_DP_ROW(3)
      TESSERA_DP_ROW(4)
      TESSERA_DP_ROW(5)
    }
  }
  alignas(64) int32_t sums[6][64];
  TESSERA_SAVE_ROW(0)
  TESSERA_SAVE_ROW(1)
  TESSERA_SAVE_ROW(2)
  TESSERA_SAVE_ROW(3)
  TESSERA_SAVE_ROW(4)
  TESSERA_SAVE_ROW(5)
  const int32_t* correction = a + static_cast<size_t>(q) * Rows;
  for (int r = 0; r < Rows; ++r) {
    const uint32_t i = m0 + r;
    vnni::store_requantized_row<Vecs>(g.q, i, correction[r], sums[r], image_out + i * g.out_stride, segments, count);
  }
}

#undef TESSERA_DP
#undef TESSERA_DP_ROW
#undef TESSERA_LOAD
#undef TESSERA_SAVE
#undef TESSERA_SAVE_ROW

// The GEMM's and the implicit GEMM's micro-kernels as types, so one dispatch serves both.
template <int Rows, int Vecs>
struct GemmKernel {
  static constexpr auto fn = &micro_kernel<Rows, Vecs>;
};
template <int Rows, int Vecs>
struct ImplicitGemmKernel {
  static constexpr auto fn = &implicit_kernel<Rows, Vecs>;
};

template <template <int, int> class Kernel, int Rows>
constexpr auto kernel_for(uint32_t vecs) {
  return vecs == 4   ? Kernel<Rows, 4>::fn
         : vecs == 3 ? Kernel<Rows, 3>::fn
         : vecs == 2 ? Kernel<Rows, 2>::fn
                     : Kernel<Rows, 1>::fn;
}

// The micro-kernel for a block of `rows` channels (1..kVnniRows) by `vecs` 16-pixel vectors (1..4).
template <template <int, int> class Kernel>
auto pick(uint32_t rows, uint32_t vecs) {
  switch (rows) {
    case 6: return kernel_for<Kernel, 6>(vecs);
    case 5: return kernel_for<Kernel, 5>(vecs);
    case 4: return kernel_for<Kernel, 4>(vecs);
    case 3: return kernel_for<Kernel, 3>(vecs);
    case 2: return kernel_for<Kernel, 2>(vecs);
    default: return kernel_for<Kernel, 1>(vecs);
  }
}

void gemm_vnni512(const GemmArgs& g) {
  const uint32_t quads = (g.k + 3) / 4;
  thread_local std::vector<uint8_t> panel;
  if (panel.size() < static_cast<size_t>(quads) * kVectors * 64)
    panel.resize(static_cast<size_t>(quads) * kVectors * 64);
  for (uint32_t n0 = 0; n0 < g.n; n0 += 16 * kVectors) {
    const uint32_t valid = g.n - n0 < 16 * kVectors ? g.n - n0 : 16 * kVectors;
    const uint32_t vecs = (valid + 15) / 16;
    vnni::pack_quads(g.col + n0, g.col_stride, g.k, vecs, panel.data());
    for (uint32_t m0 = 0; m0 < g.m; m0 += kVnniRows) {
      const uint32_t rows = g.m - m0 < kVnniRows ? g.m - m0 : kVnniRows;
      pick<GemmKernel>(rows, vecs)(g, g.packed + packed_quad_words(m0, g.k), panel.data(), quads, m0, n0, valid);
    }
  }
}

// Panels of kImplicitPanel virtual pixels by blocks of kVnniRows channels: panel-major while all
// the weights are smaller than an image's source (they stay in cache over the panels),
// channel-major otherwise (a block's weights stay in L1 over the panels of all the images: the
// late layers' 512 x 4608).
void implicit_vnni512(const ImplicitArgs& g) {
  static_assert(kImplicitPanel == 16 * kVectors);
  const uint32_t quads = g.taps * g.quads_per_tap;
  const uint32_t panel = kImplicitPanel;
  const size_t weight_bytes = static_cast<size_t>(g.m) * quads * 4;
  const size_t source_bytes = g.quad_stride * g.quads_per_tap;
  vnni::Segment segments[kImplicitPanel + 1];
  const auto run = [&](uint32_t m0, uint32_t n, uint32_t p0) {
    const uint32_t count = std::min(panel, g.pixels - p0);
    const uint32_t found = vnni::panel_segments(g, p0, count, segments);
    if (found == 0) return;
    const uint32_t rows = std::min(g.m - m0, kVnniRows);
    // Pixel p0's data: in a compact source, its panel's start.
    const uint8_t* base = g.compact_plane != 0 ? g.source + p0 / panel * g.panel_stride
                                               : g.source + n * g.image_source_stride + 4 * static_cast<size_t>(p0);
    pick<ImplicitGemmKernel>(rows, (count + 15) / 16)(g, g.packed + packed_quad_words(m0, 4 * quads), m0, base,
                                                      g.out + n * g.image_out_stride, segments, found);
  };
  // A compact source (emu_conv_compact.cc) is a task's share of the layer's im2col: channel-major,
  // so each block of weights is read once from L2 for all of the task's panels.
  if (g.compact_plane == 0 && weight_bytes <= source_bytes) {
    for (uint32_t n = 0; n < g.images; ++n) {
      for (uint32_t p0 = g.first_pixel; p0 < g.pixels; p0 += panel) {
        for (uint32_t m0 = 0; m0 < g.m; m0 += kVnniRows) run(m0, n, p0);
      }
    }
  } else {
    for (uint32_t m0 = 0; m0 < g.m; m0 += kVnniRows) {
      for (uint32_t n = 0; n < g.images; ++n) {
        for (uint32_t p0 = g.first_pixel; p0 < g.pixels; p0 += panel) run(m0, n, p0);
      }
    }
  }
}

// The direct conv's taps, 32 pixels a step: two taps' int8 rows widened to int16 and
// interleaved, one vpdpwssd (int16 pair products summed into int32 lanes, wrapping, not
// saturating) per 16 pixels with the (w[t], w[t + 1]) pair. Rows of 7, 14 or 28 pixels (the late
// layers) take one masked step, not a scalar tail.
TESSERA_VNNI512 void mac_taps_avx512(uint32_t* acc, const int8_t* const* src, const int32_t* w, uint32_t taps,
                                     uint32_t n) {
  int32_t pairs[(kMaxTaps + 1) / 2];
  for (uint32_t t = 0; t < taps; t += 2) {
    const uint32_t lo = static_cast<uint16_t>(static_cast<int16_t>(w[t]));
    const uint32_t hi = t + 1 < taps ? static_cast<uint16_t>(static_cast<int16_t>(w[t + 1])) : 0;
    pairs[t / 2] = static_cast<int32_t>(lo | (hi << 16));
  }
  // unpacklo/hi leave 128-bit lane L with pixels 8L..8L+3 / 8L+4..8L+7: these put them in order.
  const __m512i first = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
  const __m512i second = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
  for (uint32_t j = 0; j < n; j += 32) {
    // The last step is masked: it reads, adds and writes only the row's remaining pixels.
    const uint32_t left = n - j < 32 ? n - j : 32;
    const __mmask32 bytes = left == 32 ? ~0u : (1u << left) - 1;
    const auto low = static_cast<__mmask16>(bytes), high = static_cast<__mmask16>(bytes >> 16);
    __m512i lo = _mm512_setzero_si512(), hi = lo;
    for (uint32_t t = 0; t < taps; t += 2) {
      const __m512i x0 = _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(bytes, src[t] + j));
      const __m512i x1 =
          t + 1 < taps ? _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(bytes, src[t + 1] + j)) : _mm512_setzero_si512();
      const __m512i wp = _mm512_set1_epi32(pairs[t / 2]);
      lo = _mm512_dpwssd_epi32(lo, _mm512_unpacklo_epi16(x0, x1), wp);
      hi = _mm512_dpwssd_epi32(hi, _mm512_unpackhi_epi16(x0, x1), wp);
    }
    uint32_t* out = acc + j;
    _mm512_mask_storeu_epi32(
        out, low, _mm512_add_epi32(_mm512_maskz_loadu_epi32(low, out), _mm512_permutex2var_epi64(lo, first, hi)));
    _mm512_mask_storeu_epi32(
        out + 16, high,
        _mm512_add_epi32(_mm512_maskz_loadu_epi32(high, out + 16), _mm512_permutex2var_epi64(lo, second, hi)));
  }
}

// 64 bytes a step (vpmaxsb), the last step masked.
TESSERA_VNNI512 void max_row_avx512(int8_t* acc, const int8_t* x, uint32_t n) {
  for (uint32_t j = 0; j < n; j += 64) {
    const uint32_t left = n - j < 64 ? n - j : 64;
    const __mmask64 mask = left == 64 ? ~0ull : (1ull << left) - 1;
    const __m512i v = _mm512_maskz_loadu_epi8(mask, x + j);
    _mm512_mask_storeu_epi8(acc + j, mask, _mm512_max_epi8(_mm512_maskz_loadu_epi8(mask, acc + j), v));
  }
}

// 16 accumulators a step through requantize16, the last step masked.
TESSERA_VNNI512 void requantize_row_avx512(const int32_t* acc, uint32_t n, int32_t bias, int32_t multiplier,
                                           int32_t shift, int32_t lo, int32_t hi, int8_t* out) {
  const Requant512 q = make_requant(bias, multiplier, shift, lo, hi);
  for (uint32_t j = 0; j < n; j += 16) {
    const uint32_t left = n - j < 16 ? n - j : 16;
    const auto mask = static_cast<__mmask16>(left == 16 ? 0xFFFFu : (1u << left) - 1);
    _mm_mask_storeu_epi8(out + j, mask, requantize16(_mm512_maskz_loadu_epi32(mask, acc + j), q));
  }
}

// y = requantize_add(a, b, ...), 16 elements a step on 512-bit vectors (64-bit products of even
// and odd lanes, as add_row_avx2), the last step masked; each step reads a and b before it
// writes y, so y may be a or b.
TESSERA_VNNI512 void add_row_avx512(const int8_t* a, const int8_t* b, uint32_t n, int32_t multiplier_a,
                                    int32_t multiplier_b, int32_t shift, int32_t lo, int32_t hi, int8_t* y) {
  const Requant512 q = make_requant(0, 0, shift, lo, hi);
  const __m512i ma = _mm512_set1_epi32(multiplier_a), mb = _mm512_set1_epi32(multiplier_b);
  for (uint32_t j = 0; j < n; j += 16) {
    const uint32_t left = n - j < 16 ? n - j : 16;
    const auto mask = static_cast<__mmask16>(left == 16 ? 0xFFFFu : (1u << left) - 1);
    const __m512i a32 = _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(mask, a + j));
    const __m512i b32 = _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(mask, b + j));
    const __m512i even = _mm512_add_epi64(_mm512_mul_epi32(a32, ma), _mm512_mul_epi32(b32, mb));
    const __m512i odd = _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(a32, 32), ma),
                                         _mm512_mul_epi32(_mm512_srli_epi64(b32, 32), mb));
    const __m512i lanes =
        _mm512_mask_blend_epi32(0xAAAA, round_shift_clamp(even, q.round, q.shift, q.lo, q.hi),
                                _mm512_slli_epi64(round_shift_clamp(odd, q.round, q.shift, q.lo, q.hi), 32));
    _mm_mask_storeu_epi8(y + j, mask, _mm512_cvtepi32_epi8(lanes));
  }
}

}  // namespace

namespace {

// out[4 * j + b] = r_b[j] ^ 0x80 for j < 16, as four 16-byte stores (the full steps; the last,
// partial one is a masked store of interleave_quads).
TESSERA_VNNI512 inline void store_quads(__m128i r0, __m128i r1, __m128i r2, __m128i r3, uint8_t* out) {
  const __m128i flip = _mm_set1_epi8(static_cast<char>(0x80));
  const __m128i a_lo = _mm_unpacklo_epi8(r0, r1), a_hi = _mm_unpackhi_epi8(r0, r1);
  const __m128i b_lo = _mm_unpacklo_epi8(r2, r3), b_hi = _mm_unpackhi_epi8(r2, r3);
  auto* o = reinterpret_cast<__m128i*>(out);
  _mm_storeu_si128(o, _mm_xor_si128(_mm_unpacklo_epi16(a_lo, b_lo), flip));
  _mm_storeu_si128(o + 1, _mm_xor_si128(_mm_unpackhi_epi16(a_lo, b_lo), flip));
  _mm_storeu_si128(o + 2, _mm_xor_si128(_mm_unpacklo_epi16(a_hi, b_hi), flip));
  _mm_storeu_si128(o + 3, _mm_xor_si128(_mm_unpackhi_epi16(a_hi, b_hi), flip));
}

// The 64 bytes of 16 pixels' quads, x ^ 0x80: pixel j's bytes are byte j of r0, r1, r2, r3.
TESSERA_VNNI512 inline __m512i interleave_quads(__m128i r0, __m128i r1, __m128i r2, __m128i r3) {
  const __m128i a_lo = _mm_unpacklo_epi8(r0, r1), a_hi = _mm_unpackhi_epi8(r0, r1);
  const __m128i b_lo = _mm_unpacklo_epi8(r2, r3), b_hi = _mm_unpackhi_epi8(r2, r3);
  __m512i v = _mm512_castsi128_si512(_mm_unpacklo_epi16(a_lo, b_lo));
  v = _mm512_inserti32x4(v, _mm_unpackhi_epi16(a_lo, b_lo), 1);
  v = _mm512_inserti32x4(v, _mm_unpacklo_epi16(a_hi, b_hi), 2);
  v = _mm512_inserti32x4(v, _mm_unpackhi_epi16(a_hi, b_hi), 3);
  return _mm512_xor_si512(v, _mm512_set1_epi8(static_cast<char>(0x80)));
}

}  // namespace

TESSERA_VNNI512 void interleave4_avx512(const int8_t* const rows[4], uint32_t stride, size_t n, uint8_t* out) {
  for (size_t j = 0; j < n; j += 16) {
    const auto left = static_cast<uint32_t>(n - j < 16 ? n - j : 16);
    __m128i r[4];
    if (stride == 1) {
      const auto mask = static_cast<__mmask16>(left == 16 ? 0xFFFFu : (1u << left) - 1);
      for (int b = 0; b < 4; ++b) r[b] = _mm_maskz_loadu_epi8(mask, rows[b] + j);
    } else {
      // Bytes 0 .. 2 * left - 2 of the 32 from 2 * j; the words' low bytes are the even ones.
      const __mmask32 mask = (1u << (2 * left - 1)) - 1;
      for (int b = 0; b < 4; ++b) {
        const __m256i x = left == 16 && j + 16 < n
                              ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[b] + 2 * j))
                              : _mm256_maskz_loadu_epi8(mask, rows[b] + 2 * j);
        r[b] = _mm256_cvtepi16_epi8(x);
      }
    }
    const __mmask64 store = left == 16 ? ~0ull : (1ull << (4 * left)) - 1;
    _mm512_mask_storeu_epi8(out + 4 * j, store, interleave_quads(r[0], r[1], r[2], r[3]));
  }
}

TESSERA_VNNI512 void interleave4_pair_avx512(const int8_t* const rows[4], int32_t first_col, uint32_t in_w,
                                             uint32_t width, uint8_t* out0, uint8_t* out1) {
  for (uint32_t j = 0; j < width; j += 16) {
    const uint32_t left = width - j < 16 ? width - j : 16;
    // The 32 input columns from x0: those in [0, in_w) are loaded, the rest read as x = 0 (the
    // masked-off bytes are neither read nor faulted on, before the row or past it).
    const int64_t x0 = static_cast<int64_t>(first_col) + 2 * static_cast<int64_t>(j);
    const int64_t lo = std::clamp<int64_t>(-x0, 0, 32), hi = std::clamp<int64_t>(in_w - x0, lo, 32);
    const uint64_t bits = ((1ull << hi) - 1) & ~((1ull << lo) - 1);
    const auto mask = static_cast<__mmask32>(bits);
    __m128i even[4], odd[4];
    const bool inside = lo == 0 && hi == 32;  // masked byte loads are slower: only at the edges
    for (int b = 0; b < 4; ++b) {
      const __m256i x = rows[b] == nullptr ? _mm256_setzero_si256()
                        : inside           ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[b] + x0))
                                           : _mm256_maskz_loadu_epi8(mask, rows[b] + x0);
      even[b] = _mm256_cvtepi16_epi8(x);
      odd[b] = _mm256_cvtepi16_epi8(_mm256_srli_epi16(x, 8));
    }
    if (left == 16) {
      store_quads(even[0], even[1], even[2], even[3], out0 + 4 * static_cast<size_t>(j));
      store_quads(odd[0], odd[1], odd[2], odd[3], out1 + 4 * static_cast<size_t>(j));
      continue;
    }
    const __mmask64 store = (1ull << (4 * left)) - 1;
    _mm512_mask_storeu_epi8(out0 + 4 * static_cast<size_t>(j), store,
                            interleave_quads(even[0], even[1], even[2], even[3]));
    _mm512_mask_storeu_epi8(out1 + 4 * static_cast<size_t>(j), store, interleave_quads(odd[0], odd[1], odd[2], odd[3]));
  }
}

TESSERA_VNNI512 void gather_pixels_to_panels_avx512(const uint8_t* src, uint32_t pitch, uint32_t count, uint32_t rows,
                                                    uint32_t first, size_t panel_stride, uint8_t* dst) {
  for (uint32_t r = 0; r < rows; ++r, src += 4 * static_cast<size_t>(pitch)) {
    for (uint32_t j = 0; j < count;) {
      const uint32_t q = first + r * count + j;
      const uint32_t n = std::min({count - j, 16u, kImplicitPanel - q % kImplicitPanel});
      const auto mask = static_cast<__mmask16>(n == 16 ? 0xFFFFu : (1u << n) - 1);
      _mm512_mask_storeu_epi32(dst + (q / kImplicitPanel) * panel_stride + 4 * (q % kImplicitPanel), mask,
                               _mm512_maskz_loadu_epi32(mask, src + 4 * static_cast<size_t>(j)));
      j += n;
    }
  }
}

const EmuKernels* vnni512_kernels() {
  static const EmuKernels* kernels = []() -> const EmuKernels* {
    const EmuKernels* avx2 = avx2_kernels();
    if (avx2 == nullptr || !__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
        !__builtin_cpu_supports("avx512vl") || !__builtin_cpu_supports("avx512vnni")) {
      return nullptr;
    }
    static EmuKernels k = vnni::table_over_avx2(*avx2, "avx512-vnni", "AVX-512 VNNI", &gemm_vnni512);
    k.mac_taps = &mac_taps_avx512;
    k.requantize_row = &requantize_row_avx512;
    k.implicit_gemm = &implicit_vnni512;
    k.add_row = &add_row_avx512;
    k.max_row = &max_row_avx512;
    k.max_pool = max_pool_vnni512();
    k.stem_gemm = stem_gemm_vnni512();
    return &k;
  }();
  return kernels;
}

}  // namespace tessera::emu

#else  // not x86-64

namespace tessera::emu {
const EmuKernels* vnni512_kernels() { return nullptr; }
// Never called (vnni512_kernels() is null): portable loops.
void interleave4_avx512(const int8_t* const rows[4], uint32_t stride, size_t n, uint8_t* out) {
  for (size_t j = 0; j < n; ++j) {
    for (size_t b = 0; b < 4; ++b) out[4 * j + b] = static_cast<uint8_t>(rows[b][stride * j]) ^ 0x80u;
  }
}
void interleave4_pair_avx512(const int8_t* const rows[4], int32_t first_col, uint32_t in_w, uint32_t width,
                             uint8_t* out0, uint8_t* out1) {
  for (uint32_t c = 0; c < width; ++c) {
    for (uint32_t b = 0; b < 4; ++b) {
      for (int64_t px = 0; px < 2; ++px) {
        const int64_t x = static_cast<int64_t>(first_col) + 2 * c + px;
        const int8_t v = rows[b] != nullptr && x >= 0 && x < in_w ? rows[b][x] : 0;
        (px == 0 ? out0 : out1)[4 * c + b] = static_cast<uint8_t>(v) ^ 0x80u;
      }
    }
  }
}
void gather_pixels_to_panels_avx512(const uint8_t* src, uint32_t pitch, uint32_t count, uint32_t rows, uint32_t first,
                                    size_t panel_stride, uint8_t* dst) {
  for (uint32_t r = 0; r < rows; ++r) {
    for (uint32_t j = 0; j < count; ++j) {
      const uint32_t q = first + r * count + j;
      for (size_t b = 0; b < 4; ++b) {
        dst[(q / kImplicitPanel) * panel_stride + 4 * (q % kImplicitPanel) + b] =
            src[4 * (static_cast<size_t>(r) * pitch + j) + b];
      }
    }
  }
}
}  // namespace tessera::emu

#endif
