// The column panel both VNNI GEMMs (emu_conv_vnni512.cc, emu_conv_avxvnni.cc) read: vpdpbusd
// multiplies 4 unsigned bytes of one operand by 4 signed bytes of the other and adds the 4
// products to an int32 lane, so each pixel's im2col values are regrouped by 4 consecutive k
// (a quad) and offset by +128 to unsigned (x ^ 0x80); the weights' -128 * sum(w) word undoes the
// offset (pack_weights_quads). SSE2 only, the x86-64 baseline, so both files may inline it.
#pragma once

#if defined(__x86_64__)

#include <emmintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "accel/device/emu/emu_kernels.h"

namespace tessera::emu::vnni {

// A VNNI path's table: the AVX2 one (its direct conv, pool and add loops) with quad-packed
// weights (pack_weights_quads) and the path's `gemm`.
inline EmuKernels table_over_avx2(const EmuKernels& avx2, const char* id, const char* name,
                                  void (*gemm)(const GemmArgs&)) {
  EmuKernels k = avx2;
  k.id = id;
  k.name = name;
  k.pack = &pack_weights_quads;
  k.packed_words = &packed_quad_words;
  k.gemm_rows = kVnniRows;
  k.gemm = gemm;
  return k;
}

// Writes panel[((q * vecs + v) * 16 + j) * 4 + b] = x[4q + b][16v + j] ^ 0x80 for quads q <
// (k + 3) / 4, v < vecs, j < 16, b < 4; rows past k read as zero (their weights are zero). col
// holds rows of `stride` bytes, each readable for 16 * vecs bytes.
inline void pack_quads(const int8_t* col, size_t stride, uint32_t k, uint32_t vecs, uint8_t* panel) {
  const __m128i flip = _mm_set1_epi8(static_cast<char>(0x80));
  const uint32_t quads = (k + 3) / 4;
  for (uint32_t q = 0; q < quads; ++q) {
    for (uint32_t v = 0; v < vecs; ++v) {
      __m128i r[4];
      for (uint32_t b = 0; b < 4; ++b) {
        const uint32_t row = 4 * q + b;
        r[b] = row < k ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(col + row * stride + 16 * v))
                       : _mm_setzero_si128();
      }
      const __m128i a_lo = _mm_unpacklo_epi8(r[0], r[1]), a_hi = _mm_unpackhi_epi8(r[0], r[1]);
      const __m128i b_lo = _mm_unpacklo_epi8(r[2], r[3]), b_hi = _mm_unpackhi_epi8(r[2], r[3]);
      __m128i* out = reinterpret_cast<__m128i*>(panel + (static_cast<size_t>(q) * vecs + v) * 64);
      _mm_storeu_si128(out, _mm_xor_si128(_mm_unpacklo_epi16(a_lo, b_lo), flip));
      _mm_storeu_si128(out + 1, _mm_xor_si128(_mm_unpackhi_epi16(a_lo, b_lo), flip));
      _mm_storeu_si128(out + 2, _mm_xor_si128(_mm_unpacklo_epi16(a_hi, b_hi), flip));
      _mm_storeu_si128(out + 3, _mm_xor_si128(_mm_unpackhi_epi16(a_hi, b_hi), flip));
    }
  }
}

// A run of an implicit GEMM panel's pixels that are outputs: panel bytes [start, start + len)
// go to out + offset of each channel's plane (the AVX-512 implicit and stem GEMMs).
struct Segment {
  uint32_t start, len;
  size_t offset;
};

// The output runs of virtual pixels [p0, p0 + count) (rows of g.width, the first g.valid_w
// of each an output; or, with g.compact_plane, images' planes end to end); returns how many.
inline uint32_t panel_segments(const ImplicitArgs& g, uint32_t p0, uint32_t count, Segment* segments) {
  uint32_t found = 0;
  if (g.compact_plane != 0) {
    for (uint32_t p = p0; p < p0 + count;) {
      const uint32_t n = p / g.compact_plane, x = p % g.compact_plane;
      const uint32_t end = std::min(p0 + count, p + (g.compact_plane - x));
      segments[found++] = {p - p0, end - p, n * g.image_out_stride + x};
      p = end;
    }
    return found;
  }
  for (uint32_t p = p0; p < p0 + count;) {
    const uint32_t y = p / g.width, x = p % g.width;
    const uint32_t row_end = std::min(p0 + count, p + (g.width - x));
    if (x < g.valid_w) {
      const uint32_t end = std::min(row_end, p + (g.valid_w - x));
      segments[found++] = {p - p0, end - p, static_cast<size_t>(y) * g.valid_w + x};
    }
    p = row_end;
  }
  return found;
}

}  // namespace tessera::emu::vnni

#endif
