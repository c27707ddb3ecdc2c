// The GEMM path of kOpConv: im2col of a block of output rows into int8 rows
// [in_channel, ky, kx][pixel] (the weights' own k order), then one GEMM per block of output
// channels with requantisation fused into the store.
#include <algorithm>
#include <cstring>
#include <vector>

#include "accel/device/emu/emu_conv_shape.h"

#if defined(__x86_64__)
#include <emmintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace tessera::emu {
namespace {

// One im2col row (tap ky, kx of one input channel plane) for output rows [row_begin, row_end).
void build_tap_row(const ConvShape& s, const int8_t* plane, uint32_t ky, uint32_t kx, uint32_t row_begin,
                   uint32_t row_end, int8_t* dst) {
  const uint32_t begin = s.ox_begin[kx], end = s.ox_end[kx];
  const int32_t col_offset = static_cast<int32_t>(kx * s.dilation_w) - s.pad_left;
  const int32_t row_offset = static_cast<int32_t>(ky * s.dilation_h) - s.pad_top;
  // Stride 1 over input rows as wide as the output rows: the rows in range are one shifted block
  // of the plane; one copy, then the columns outside [begin, end) (which read the neighbouring
  // rows' pixels) are zeroed.
  if (s.stride_w == 1 && s.stride_h == 1 && s.in_w == s.conv_w && begin < end) {
    const int32_t first = std::max<int32_t>(static_cast<int32_t>(row_begin), -row_offset);
    const int32_t last = std::min<int32_t>(static_cast<int32_t>(row_end), static_cast<int32_t>(s.in_h) - row_offset);
    if (first >= last) {
      std::memset(dst, 0, static_cast<size_t>(row_end - row_begin) * s.conv_w);
      return;
    }
    const size_t lead = static_cast<size_t>(first - static_cast<int32_t>(row_begin)) * s.conv_w;
    const size_t body = static_cast<size_t>(last - first) * s.conv_w;
    std::memset(dst, 0, lead);
    // Pixel (oy, ox) reads plane[(oy + row_offset) * in_w + ox + col_offset]; the block starts at
    // ox = 0 of row `first`, which may lie before the plane (col_offset < 0) or run past its end:
    // those bytes are in the zeroed columns, so the copy is clipped to the plane.
    const int64_t src0 = static_cast<int64_t>(first + row_offset) * s.in_w + col_offset;
    const int64_t copy_begin = std::max<int64_t>(src0, 0);
    const int64_t copy_end = std::min<int64_t>(src0 + static_cast<int64_t>(body), static_cast<int64_t>(s.in_plane));
    std::memcpy(dst + lead + (copy_begin - src0), plane + copy_begin, static_cast<size_t>(copy_end - copy_begin));
    int8_t* out = dst + lead;
    for (int32_t oy = first; oy < last; ++oy, out += s.conv_w) {
      for (uint32_t ox = 0; ox < begin; ++ox) out[ox] = 0;
      for (uint32_t ox = end; ox < s.conv_w; ++ox) out[ox] = 0;
    }
    std::memset(out, 0, static_cast<size_t>(static_cast<int32_t>(row_end) - last) * s.conv_w);
    return;
  }
  int8_t* out = dst;
  for (uint32_t oy = row_begin; oy < row_end; ++oy, out += s.conv_w) {
    const int32_t iy = static_cast<int32_t>(oy * s.stride_h) + row_offset;
    if (iy < 0 || iy >= static_cast<int32_t>(s.in_h) || begin == end) {
      std::memset(out, 0, s.conv_w);
      continue;
    }
    std::memset(out, 0, begin);
    std::memset(out + end, 0, s.conv_w - end);
    const int8_t* row =
        plane + static_cast<size_t>(iy) * s.in_w + (static_cast<int32_t>(begin * s.stride_w) + col_offset);
    if (s.stride_w == 1) {
      std::memcpy(out + begin, row, end - begin);
    } else if (s.stride_w == 2) {
      copy_stride2(out + begin, row, end - begin);
    } else {
      for (uint32_t ox = 0; ox < end - begin; ++ox) out[begin + ox] = row[ox * s.stride_w];
    }
  }
}

// Fills col[k][stride] for rows [row_begin, row_end) of one group; pixel j = (oy - row_begin) *
// conv_w + ox. Out-of-range input reads as zero (padding); the tail up to `stride` and the
// extra row of an odd k are zero, as GemmArgs asks.
void build_columns(const ConvShape& s, const int8_t* in, uint32_t row_begin, uint32_t row_end, int8_t* col,
                   size_t stride) {
  const size_t n = static_cast<size_t>(row_end - row_begin) * s.conv_w;
  int8_t* dst = col;
  for (uint32_t ic = 0; ic < s.in_per_group; ++ic) {
    const int8_t* plane = in + ic * s.in_plane;
    for (uint32_t ky = 0; ky < s.kernel_h; ++ky) {
      for (uint32_t kx = 0; kx < s.kernel_w; ++kx, dst += stride) {
        build_tap_row(s, plane, ky, kx, row_begin, row_end, dst);
        std::memset(dst + n, 0, stride - n);
      }
    }
  }
  if (s.k % 2 != 0) std::memset(dst, 0, stride);
}

}  // namespace

// GCC leaves this loop byte by byte,
// so the baseline SIMD of each 64-bit target (SSE2 on x86-64, Advanced SIMD on aarch64; neither
// needs a run-time check) deinterleaves 16 bytes a step: stride-2 convs' im2col (ResNet's
// first 7x7 and its downsampling layers) was as costly as their GEMM.
void copy_stride2(int8_t* out, const int8_t* src, uint32_t n) {
  uint32_t j = 0;
#if defined(__x86_64__)
  const __m128i low_bytes = _mm_set1_epi16(0x00FF);
  for (; j + 16 <= n; j += 16) {
    const __m128i a = _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * j)), low_bytes);
    const __m128i b = _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * j + 16)), low_bytes);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j), _mm_packus_epi16(a, b));  // words 0..255: no saturation
  }
#elif defined(__aarch64__)
  for (; j + 16 <= n; j += 16) vst1q_s8(out + j, vld2q_s8(src + 2 * j).val[0]);
#endif
  for (; j < n; ++j) out[j] = src[2 * j];
}

void conv_gemm_block(const LayerRun& run, const ConvShape& s, uint32_t n, uint32_t g, uint32_t row_begin,
                     uint32_t row_end, uint32_t oc_begin, uint32_t oc_end) {
  const size_t pixels = static_cast<size_t>(row_end - row_begin) * s.conv_w;
  const size_t stride = (pixels + kGemmPanel - 1) / kGemmPanel * kGemmPanel;
  thread_local std::vector<int8_t> col;
  const size_t rows = s.k + (s.k % 2);
  if (col.size() < rows * stride) col.resize(rows * stride);
  build_columns(s, conv_input(run, s, n, g), row_begin, row_end, col.data(), stride);

  const uint32_t first = g * s.out_per_group + oc_begin;  // first output channel of the block
  GemmArgs args{};
  args.weights = run.weights + run.d.weight_offset + static_cast<size_t>(first) * s.k;
  args.packed = run.packed == nullptr ? nullptr
                                      : run.packed + g * run.kernels.packed_words(s.out_per_group, s.k) +
                                            run.kernels.packed_words(oc_begin, s.k);
  args.m = oc_end - oc_begin;
  args.k = s.k;
  args.col = col.data();
  args.col_stride = stride;
  args.n = static_cast<uint32_t>(pixels);
  args.q = conv_requant(run, first);
  args.out = conv_output(run, s, n, first) + static_cast<size_t>(row_begin) * s.conv_w;
  args.out_stride = s.conv_plane;
  run.kernels.gemm(args);
}

}  // namespace tessera::emu
