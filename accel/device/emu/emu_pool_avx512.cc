// The max pool of one plane on AVX-512 (BW), the VNNI path's EmuKernels::max_pool: the stem's
// fused 3x3/2 pool over each task's conv rows (emu_conv_stem.cc), kOpPool's max pools and the
// other fused pools. max_pool_plane (emu_pool.cc) makes a call per row and window column, each
// with a stride-2 gather: on 112-wide rows that was a fifth of ResNet-18's stem. Here a window's
// rows are max'ed in registers into a line with -128 on both sides (-128 never wins a max and is
// what a window with no position in range gives, so clipping and padding agree), and each
// output vector takes one load per window column; stride 2 reads the line as 16-bit words and
// keeps their low (even) bytes. Only functions marked TESSERA_AVX512BW use AVX-512; the table
// offers this one on the AVX-512 VNNI path only.
#include "accel/device/emu/emu_kernels.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#define TESSERA_AVX512BW __attribute__((target("avx512f,avx512bw,avx512vl")))

namespace tessera::emu {
namespace {

// Guard bytes (-128) before a line's first column: a window reaches at most pad_left < 64 before it.
constexpr size_t kGuard = 64;

// Bytes [0, n) of a 64-byte step.
TESSERA_AVX512BW inline __mmask64 first_bytes(size_t n) { return n >= 64 ? ~0ull : (1ull << n) - 1; }

// line[kGuard + x] = max over rows [begin, end) of src's row x, for x < in_w (-128 when the
// span is empty); the guards around the columns are left as they are.
TESSERA_AVX512BW void column_max(const int8_t* src, uint32_t in_w, int32_t begin, int32_t end, int8_t* line) {
  const __m512i lowest = _mm512_set1_epi8(INT8_MIN);
  for (size_t x = 0; x < in_w; x += 64) {
    const size_t n = in_w - x;
    __m512i v = lowest;
    // Plain loads and stores for whole steps: masked stores cost more on some cores.
    if (n >= 64) {
      for (int32_t y = begin; y < end; ++y) {
        v = _mm512_max_epi8(v, _mm512_loadu_si512(src + static_cast<size_t>(y) * in_w + x));
      }
      _mm512_storeu_si512(line + kGuard + x, v);
      continue;
    }
    const __mmask64 mask = first_bytes(n);
    for (int32_t y = begin; y < end; ++y) {
      v = _mm512_max_epi8(v, _mm512_maskz_loadu_epi8(mask, src + static_cast<size_t>(y) * in_w + x));
    }
    _mm512_mask_storeu_epi8(line + kGuard + x, mask, v);
  }
}

// 32 int16 lanes (low bytes of words) -> 32 bytes, stored at out (the first n <= 32): a pack and
// a lane permute (GCC folds vpmovwb into a store, slow on some cores); the words are int8
// values, so the pack's saturation never applies. (Zero-masked forms with every lane selected:
// GCC 12's unmasked ones trip -Wmaybe-uninitialized.)
TESSERA_AVX512BW inline void store_words(__m512i v, size_t n, int8_t* out) {
  const __m512i packed = _mm512_maskz_permutexvar_epi64(__mmask8{0xFF}, _mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7),
                                                        _mm512_packs_epi16(v, v));
  const __m256i bytes = _mm512_maskz_extracti64x4_epi64(__mmask8{0xF}, packed, 0);
  if (n >= 32) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), bytes);
  } else {
    _mm256_mask_storeu_epi8(out, static_cast<__mmask32>(first_bytes(n)), bytes);
  }
}

// out[x] = max over kx < w of line[kGuard + x * stride + kx - pad] for x < out_w (stride 1 or 2).
TESSERA_AVX512BW void row_max(const int8_t* line, const MaxPoolArgs& a, int8_t* out) {
  const int8_t* base = line + kGuard - a.pad_left;
  if (a.stride_w == 1) {
    for (size_t x = 0; x < a.out_w; x += 64) {
      __m512i v = _mm512_loadu_si512(base + x);
      for (uint32_t kx = 1; kx < a.w; ++kx) v = _mm512_max_epi8(v, _mm512_loadu_si512(base + x + kx));
      _mm512_mask_storeu_epi8(out + x, first_bytes(a.out_w - x), v);
    }
    return;
  }
  for (size_t x = 0; x < a.out_w; x += 32) {
    // Word j of a load at base + 2x + kx holds line column 2(x + j) + kx - pad in its low byte.
    __m512i v = _mm512_set1_epi16(INT8_MIN);
    for (uint32_t kx = 0; kx < a.w; ++kx) {
      const __m512i words = _mm512_loadu_si512(base + 2 * x + kx);
      v = _mm512_max_epi16(v, _mm512_srai_epi16(_mm512_slli_epi16(words, 8), 8));
    }
    store_words(v, a.out_w - x, out + x);
  }
}

TESSERA_AVX512BW bool max_pool_avx512(const MaxPoolArgs& a) {
  if ((a.stride_w != 1 && a.stride_w != 2) || a.pad_left >= kGuard || a.w > kGuard) return false;
  // A line per output row: kGuard bytes of -128, the columns, and -128 past them as far as any
  // window and the last (full-width) load read: kGuard + max(in_w, stride * out_w + w) + 64.
  // All rows' column maxima are stored before the first row's windows load them: a load of
  // bytes just stored by other (masked, differently aligned) stores is not forwarded and waits
  // for them to retire, which on a line at a time stalled every load.
  const size_t span = a.in_w > a.stride_w * a.out_w + a.w ? a.in_w : a.stride_w * a.out_w + a.w;
  const size_t pitch = (kGuard + span + 64 + 63) / 64 * 64;
  // The guards stay from the call before when the lines have the same layout (a layer's
  // channels, one after another): column_max writes only the columns.
  thread_local std::vector<int8_t> lines;
  thread_local size_t lines_pitch = 0, lines_in_w = 0;
  if (pitch != lines_pitch || a.in_w != lines_in_w || lines.size() < pitch * a.out_h) {
    lines.assign(pitch * a.out_h, INT8_MIN);
    lines_pitch = pitch, lines_in_w = a.in_w;
  }
  for (uint32_t oy = 0; oy < a.out_h; ++oy) {
    const int32_t start = static_cast<int32_t>(oy * a.stride_h) - static_cast<int32_t>(a.pad_top);
    const int32_t begin = start > 0 ? start : 0;
    const int32_t stop = start + static_cast<int32_t>(a.h);
    const int32_t end = stop < static_cast<int32_t>(a.in_h) ? stop : static_cast<int32_t>(a.in_h);
    column_max(a.src, a.in_w, begin, end, lines.data() + oy * pitch);
  }
  for (uint32_t oy = 0; oy < a.out_h; ++oy)
    row_max(lines.data() + oy * pitch, a, a.dst + static_cast<size_t>(oy) * a.out_w);
  return true;
}

}  // namespace

MaxPoolFn max_pool_vnni512() { return &max_pool_avx512; }

}  // namespace tessera::emu

#else  // not x86-64

namespace tessera::emu {
MaxPoolFn max_pool_vnni512() { return nullptr; }
}  // namespace tessera::emu

#endif
