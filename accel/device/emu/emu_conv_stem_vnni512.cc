// The stem path's GEMM on AVX-512 VNNI (EmuKernels::stem_gemm; emu_conv_stem.cc builds its
// source and packs its weights): the implicit GEMM of emu_conv_vnni512.cc (ImplicitArgs, 6
// channels x 64 virtual pixels, vpdpbusd, masked stores of each output row's segments) with 3
// quads per tap. A stem's reduction is short (42 quads for a 7x7 over 3 channels), so the
// requantisation was a third of this kernel's time: hence the saturating one of
// emu_vnni512_row_store.h, which the implicit GEMM now shares.
// Only functions marked TESSERA_STEM512 use AVX-512; the table offers it only on CPUs with
// avx512f, bw, vl and vnni.
#include "accel/device/emu/emu_kernels.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "accel/device/emu/emu_vnni512_row_store.h"
#include "accel/device/emu/emu_vnni_panel.h"

#define TESSERA_STEM512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

namespace tessera::emu {
namespace {

// Quads per tap of a stem: its 3 input channels.
constexpr uint32_t kQuadsPerTap = 3;
// Virtual pixels of one panel: 4 vectors of 16.
constexpr uint32_t kPanel = 64;

// acc += the four u8 x s8 products of each lane of b and w, wrapping (vpdpbusd); in assembly for
// the reason emu_conv_vnni512.cc gives (GCC 12 ties the intrinsic's accumulator to zmm0-15).
TESSERA_STEM512 inline void dpbusd(__m512i& acc, __m512i b, __m512i w) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(b), "v"(w));
}

// NOLINTBEGIN(bugprone-macro-parentheses)
#define TESSERA_STEM_DP(R, V) \
  if constexpr (Rows > R && Vecs > V) dpbusd(acc##R##V, b##V, w);
#define TESSERA_STEM_DP_ROW(R)                                                              \
  if constexpr (Rows > R) {                                                                 \
    const __m512i w = _mm512_set1_epi32(a[q * Rows + R]);                                   \
    TESSERA_STEM_DP(R, 0) TESSERA_STEM_DP(R, 1) TESSERA_STEM_DP(R, 2) TESSERA_STEM_DP(R, 3) \
  }
#define TESSERA_STEM_SAVE(R, V) \
  if constexpr (Rows > R && Vecs > V) _mm512_store_si512(sums[R] + 16 * V, acc##R##V);
#define TESSERA_STEM_SAVE_ROW(R) \
  TESSERA_STEM_SAVE(R, 0) TESSERA_STEM_SAVE(R, 1) TESSERA_STEM_SAVE(R, 2) TESSERA_STEM_SAVE(R, 3)
#define TESSERA_STEM_LOAD(V) \
  if constexpr (Vecs > V) b##V = _mm512_loadu_si512(p + 64 * V);
// NOLINTEND(bugprone-macro-parentheses)

// Rows x (16 * Vecs) pixels from virtual pixel p0 over all taps and the 3 quads of each.
template <int Rows, int Vecs>
TESSERA_STEM512 void stem_kernel(const ImplicitArgs& g, const int32_t* a, uint32_t m0, uint32_t p0,
                                 const vnni::Segment* segments, uint32_t count) {
  __m512i acc00 = _mm512_setzero_si512(), acc01 = acc00, acc02 = acc00, acc03 = acc00, acc10 = acc00, acc11 = acc00,
          acc12 = acc00, acc13 = acc00, acc20 = acc00, acc21 = acc00, acc22 = acc00, acc23 = acc00, acc30 = acc00,
          acc31 = acc00, acc32 = acc00, acc33 = acc00, acc40 = acc00, acc41 = acc00, acc42 = acc00, acc43 = acc00,
          acc50 = acc00, acc51 = acc00, acc52 = acc00, acc53 = acc00;
  __m512i b0 = acc00, b1 = acc00, b2 = acc00, b3 = acc00;
  const uint8_t* base = g.source + 4 * static_cast<size_t>(p0);
  uint32_t q = 0;
  for (uint32_t t = 0; t < g.taps; ++t) {
    const uint8_t* p = base + g.tap_offset[t];
#pragma GCC unroll 3
    for (uint32_t c = 0; c < kQuadsPerTap; ++c, ++q, p += g.quad_stride) {
      TESSERA_STEM_LOAD(0)
      TESSERA_STEM_LOAD(1)
      TESSERA_STEM_LOAD(2)
      TESSERA_STEM_LOAD(3)
      TESSERA_STEM_DP_ROW(0)
      TESSERA_STEM_DP_ROW(1)
      TESSERA_STEM_DP_ROW(2)
      TESSERA_STEM_DP_ROW(3)
      TESSERA_STEM_DP_ROW(4)
      TESSERA_STEM_DP_ROW(5)
    }
  }
  // The sums go through memory once, so the requantisation does not hold 24 live registers.
  alignas(64) int32_t sums[6][64];
  TESSERA_STEM_SAVE_ROW(0)
  TESSERA_STEM_SAVE_ROW(1)
  TESSERA_STEM_SAVE_ROW(2)
  TESSERA_STEM_SAVE_ROW(3)
  TESSERA_STEM_SAVE_ROW(4)
  TESSERA_STEM_SAVE_ROW(5)
  const int32_t* correction = a + static_cast<size_t>(q) * Rows;
  for (int r = 0; r < Rows; ++r) {
    const uint32_t i = m0 + r;
    vnni::store_requantized_row<Vecs>(g.q, i, correction[r], sums[r], g.out + i * g.out_stride, segments, count);
  }
}

#undef TESSERA_STEM_DP
#undef TESSERA_STEM_DP_ROW
#undef TESSERA_STEM_LOAD
#undef TESSERA_STEM_SAVE
#undef TESSERA_STEM_SAVE_ROW

using StemKernelFn = void (*)(const ImplicitArgs&, const int32_t*, uint32_t, uint32_t, const vnni::Segment*, uint32_t);

template <int Rows>
StemKernelFn kernel_for(uint32_t vecs) {
  return vecs == 4   ? &stem_kernel<Rows, 4>
         : vecs == 3 ? &stem_kernel<Rows, 3>
         : vecs == 2 ? &stem_kernel<Rows, 2>
                     : &stem_kernel<Rows, 1>;
}

// The kernel for a block of `rows` channels (1..kVnniRows) by `vecs` 16-pixel vectors (1..4).
StemKernelFn pick(uint32_t rows, uint32_t vecs) {
  switch (rows) {
    case 6: return kernel_for<6>(vecs);
    case 5: return kernel_for<5>(vecs);
    case 4: return kernel_for<4>(vecs);
    case 3: return kernel_for<3>(vecs);
    case 2: return kernel_for<2>(vecs);
    default: return kernel_for<1>(vecs);
  }
}

// Panel-major: a stem's weights (64 channels x 42 quads, 11 KB) stay in L1 over the panels, and
// each panel's source over the channel blocks.
void stem_gemm_avx512(const ImplicitArgs& g) {
  const uint32_t quads = g.taps * kQuadsPerTap;
  vnni::Segment segments[kPanel + 1];
  for (uint32_t p0 = 0; p0 < g.pixels; p0 += kPanel) {
    const uint32_t count = std::min(kPanel, g.pixels - p0);
    const uint32_t found = vnni::panel_segments(g, p0, count, segments);
    if (found == 0) continue;
    for (uint32_t m0 = 0; m0 < g.m; m0 += kVnniRows) {
      const uint32_t rows = std::min(g.m - m0, kVnniRows);
      pick(rows, (count + 15) / 16)(g, g.packed + packed_quad_words(m0, 4 * quads), m0, p0, segments, found);
    }
  }
}

}  // namespace

StemGemmFn stem_gemm_vnni512() { return &stem_gemm_avx512; }

}  // namespace tessera::emu

#else  // not x86-64

namespace tessera::emu {
StemGemmFn stem_gemm_vnni512() { return nullptr; }
}  // namespace tessera::emu

#endif
