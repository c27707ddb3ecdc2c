// The implicit-GEMM path of kOpConv (kernels with an implicit_gemm: AVX-512 VNNI): no im2col and
// no panel packing. A task builds, from the input rows its output rows read, a quad source:
// per quad of 4 input channels and per stride phase (py, px), rows of padded input pixels as 4
// interleaved bytes x + 128, phase (py, px) holding padded rows py, py + stride_h, ... and
// columns px, px + stride_w, ... Output pixel (oy, ox) of tap (ky, kx) then reads phase
// ((ky * dh) % sh, (kx * dw) % sw) at row oy + (ky * dh) / sh, column ox + (kx * dw) / sw: with
// the phase's rows `width` wide, a constant offset per tap from virtual pixel oy * width + ox.
// So every tap's 16 pixels are one contiguous 64-byte load of the source (emu_kernels.h,
// ImplicitArgs), and the source is about the size of the input rows, where im2col wrote each
// input byte kernel_h x kernel_w times and packing read and wrote it again.
#include <algorithm>
#include <cstring>
#include <vector>

#include "accel/device/emu/emu_conv_shape.h"
#include "accel/device/emu/emu_quad_source.h"

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace tessera::emu {

void interleave4(const int8_t* const rows[4], size_t n, uint8_t* out) {
  size_t j = 0;
#if defined(__x86_64__)
  const __m128i flip = _mm_set1_epi8(static_cast<char>(0x80));
  for (; j + 16 <= n; j += 16) {
    const __m128i r0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[0] + j));
    const __m128i r1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[1] + j));
    const __m128i r2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[2] + j));
    const __m128i r3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[3] + j));
    const __m128i a_lo = _mm_unpacklo_epi8(r0, r1), a_hi = _mm_unpackhi_epi8(r0, r1);
    const __m128i b_lo = _mm_unpacklo_epi8(r2, r3), b_hi = _mm_unpackhi_epi8(r2, r3);
    auto* o = reinterpret_cast<__m128i*>(out + 4 * j);
    _mm_storeu_si128(o, _mm_xor_si128(_mm_unpacklo_epi16(a_lo, b_lo), flip));
    _mm_storeu_si128(o + 1, _mm_xor_si128(_mm_unpackhi_epi16(a_lo, b_lo), flip));
    _mm_storeu_si128(o + 2, _mm_xor_si128(_mm_unpacklo_epi16(a_hi, b_hi), flip));
    _mm_storeu_si128(o + 3, _mm_xor_si128(_mm_unpackhi_epi16(a_hi, b_hi), flip));
  }
#endif
  for (; j < n; ++j) {
    for (size_t b = 0; b < 4; ++b) out[4 * j + b] = static_cast<uint8_t>(rows[b][j]) ^ 0x80u;
  }
}

void phase_row(const ConvShape& s, const int8_t* row, uint32_t px, uint32_t width, int8_t* dst) {
  std::memset(dst, 0, width + 16);
  // Columns c with 0 <= c * sw + px - pad_left < in_w.
  const int64_t offset = static_cast<int64_t>(px) - s.pad_left;
  const int64_t first = offset >= 0 ? 0 : (-offset + s.stride_w - 1) / s.stride_w;
  const int64_t last_x = static_cast<int64_t>(s.in_w) - 1 - offset;
  const int64_t end = std::min<int64_t>(width, last_x < 0 ? 0 : last_x / s.stride_w + 1);
  if (first >= end) return;
  const int8_t* from = row + (first * s.stride_w + offset);
  const auto count = static_cast<uint32_t>(end - first);
  if (s.stride_w == 1) {
    std::memcpy(dst + first, from, count);
  } else if (s.stride_w == 2) {
    copy_stride2(dst + first, from, count);
  } else {
    for (uint32_t i = 0; i < count; ++i) dst[first + i] = from[static_cast<size_t>(i) * s.stride_w];
  }
}

void quad_row(const ConvShape& s, const int8_t* in, uint32_t quad, int64_t iy, uint32_t px, uint32_t width,
              uint8_t* out) {
  if (iy < 0 || iy >= s.in_h || 4 * quad >= s.in_per_group) {
    std::memset(out, 0x80, 4 * static_cast<size_t>(width));
    return;
  }
  thread_local std::vector<int8_t> lines, zero;
  const size_t line_bytes = 2 * static_cast<size_t>(width) + 32;
  if (zero.size() < line_bytes) zero.assign(line_bytes, 0);
  const int8_t* line[4];
  const int8_t* row = in + static_cast<size_t>(iy) * s.in_w;
  // Stride 2 on AVX-512: the input rows are interleaved where they are, every other byte from
  // the first column inside the input (columns [first, end)), and the padding columns around
  // them set to x = 0; one pass, no copy of the rows (a copy per channel row and a scalar tail
  // per 16 pixels were a third of a stride-2 layer's time on 28-pixel rows).
  static const bool wide = vnni512_kernels() != nullptr;
  if (wide && s.stride_w == 2) {
    const int64_t offset = static_cast<int64_t>(px) - s.pad_left;
    const int64_t first = std::min<int64_t>(offset >= 0 ? 0 : (-offset + s.stride_w - 1) / s.stride_w, width);
    const int64_t last_x = static_cast<int64_t>(s.in_w) - 1 - offset;
    const int64_t end = std::clamp<int64_t>(last_x < 0 ? 0 : last_x / s.stride_w + 1, first, width);
    for (uint32_t b = 0; b < 4; ++b) {
      const uint32_t ic = 4 * quad + b;
      line[b] = ic < s.in_per_group ? row + ic * s.in_plane + (first * s.stride_w + offset) : zero.data();
    }
    std::memset(out, 0x80, 4 * static_cast<size_t>(first));
    interleave4_avx512(line, s.stride_w, static_cast<size_t>(end - first), out + 4 * first);
    std::memset(out + 4 * end, 0x80, 4 * static_cast<size_t>(width - end));
    return;
  }
  if (lines.size() < 4 * line_bytes) lines.resize(4 * line_bytes);
  for (uint32_t b = 0; b < 4; ++b) {
    const uint32_t ic = 4 * quad + b;
    if (ic >= s.in_per_group) {
      line[b] = zero.data();
      continue;
    }
    int8_t* dst = lines.data() + b * line_bytes;
    phase_row(s, row + ic * s.in_plane, px, width, dst);
    line[b] = dst;
  }
  interleave4(line, width, out);
}

namespace {

// Extra virtual pixels past the last row: the last 16-pixel step reads up to 15 pixels past the
// task's pixels plus the largest column offset (< kMaxKernel * kMaxDilation).
constexpr uint32_t kSlackPixels = 16 + abi::kMaxKernel * abi::kMaxDilation + 16;

// Which plane of a task's quad source: channel quad c, stride phase (py, px), phase rows
// [row_begin, row_begin + rows).
struct PlaneSpot {
  uint32_t c, py, px, row_begin, rows;
};

// Writes one plane of the quad source (plane_bytes bytes, the slack past the rows as x = 0).
void fill_plane(const ConvShape& s, const ImplicitGeometry& geo, const int8_t* in, const PlaneSpot& at, uint8_t* plane,
                size_t plane_bytes) {
  const size_t used = 4 * static_cast<size_t>(at.rows) * geo.width;
  std::memset(plane + used, 0x80, plane_bytes - used);
  // Stride 1 along rows: a phase row is the input row shifted by pad_left, so the input rows are
  // interleaved where they are (columns [first, end)) and the padding columns around them set
  // to x = 0, one pass with no copy of the rows. (The same on AVX-512 with masked loads for the
  // padding was ~8% slower on 28x28 and 56x56 maps: layerbench, interleaved.)
  const int64_t first = std::clamp<int64_t>(s.pad_left, 0, geo.width);
  const int64_t end = std::clamp<int64_t>(static_cast<int64_t>(s.in_w) + s.pad_left, first, geo.width);
  thread_local std::vector<int8_t> zero;
  if (zero.size() < geo.width + 16u) zero.assign(geo.width + 16, 0);
  for (uint32_t r = 0; r < at.rows; ++r) {
    // Phase row r is padded row (row_begin + r) * stride_h + py, input row that - pad_top.
    const int64_t iy = static_cast<int64_t>(at.row_begin + r) * s.stride_h + at.py - s.pad_top;
    uint8_t* out = plane + 4 * static_cast<size_t>(r) * geo.width;
    if (s.stride_w != 1 || iy < 0 || iy >= s.in_h || 4 * at.c >= s.in_per_group) {
      quad_row(s, in, at.c, iy, at.px, geo.width, out);
      continue;
    }
    const int8_t* line[4];
    for (uint32_t b = 0; b < 4; ++b) {
      const uint32_t ic = 4 * at.c + b;
      line[b] = ic < s.in_per_group ? in + ic * s.in_plane + static_cast<size_t>(iy) * s.in_w + (first - s.pad_left)
                                    : zero.data();
    }
    std::memset(out, 0x80, 4 * static_cast<size_t>(first));
    interleave4(line, static_cast<size_t>(end - first), out + 4 * first);
    std::memset(out + 4 * end, 0x80, 4 * static_cast<size_t>(geo.width - end));
  }
}

}  // namespace

bool conv_uses_implicit(const EmuKernels& kernels, const abi::LayerDesc& d) {
  if (kernels.implicit_gemm == nullptr || !conv_uses_gemm(d)) return false;
  // 1x1 convs stay on im2col + GEMM, whose panel is the input rows themselves (stride 1) or one
  // strided copy: measured on the implicit path they were slower (tessera_bench int8 b8, 3 pairs,
  // quiet machine: MobileNetV2 272-281 -> 311-314 images/s with 1x1 on the GEMM path, SqueezeNet
  // 1.1 467/585 -> 494/623, GoogLeNet and ResNet-18 no worse).
  if (d.kernel_h == 1 && d.kernel_w == 1) return false;
  // Channels are padded to quads: 3 channels (an RGB stem) waste a quarter of the MACs and still
  // beat im2col + GEMM, whose columns for a 7x7/2 stem are 49 times the input; 1, 2, 5, 6, ...
  // waste more.
  const uint32_t per_group = d.in_c / d.groups;
  return per_group % 4 == 0 || per_group >= 16 || per_group == 3;
}

ImplicitGeometry implicit_geometry(const ConvShape& s) {
  ImplicitGeometry geo{};
  for (uint32_t ky = 0; ky < s.kernel_h; ++ky) {
    geo.extra_rows = std::max(geo.extra_rows, ky * s.dilation_h / s.stride_h);
    for (uint32_t kx = 0; kx < s.kernel_w; ++kx) {
      geo.extra_cols = std::max(geo.extra_cols, kx * s.dilation_w / s.stride_w);
      geo.phase_used[(ky * s.dilation_h % s.stride_h) * s.stride_w + kx * s.dilation_w % s.stride_w] = true;
    }
  }
  for (uint32_t p = 0; p < s.stride_h * s.stride_w; ++p) {
    geo.phase_slot[p] = geo.phases;
    if (geo.phase_used[p]) ++geo.phases;
  }
  geo.width = s.conv_w + geo.extra_cols;
  geo.quads_per_tap = (s.in_per_group + 3) / 4;
  return geo;
}

ImplicitSource implicit_source(const ImplicitGeometry& geo, uint32_t out_rows) {
  const uint32_t rows = out_rows + geo.extra_rows;  // phase rows the outputs read
  const size_t plane_pixels = static_cast<size_t>(rows) * geo.width + kSlackPixels;
  ImplicitSource src{};
  src.plane_bytes = 4 * ((plane_pixels + 15) / 16 * 16);
  src.quad_stride = src.plane_bytes * geo.phases;
  src.bytes = src.quad_stride * geo.quads_per_tap;
  return src;
}

// Stride 2 along rows on AVX-512, both column phases of row phase `at.py` (at.px unused) from one
// pass over the input rows (each plane plane_bytes bytes, the slack past the rows as x = 0).
void fill_plane_pair(const ConvShape& s, const ImplicitGeometry& geo, const int8_t* in, const PlaneSpot& at,
                     uint8_t* plane0, uint8_t* plane1, size_t plane_bytes) {
  const size_t used = 4 * static_cast<size_t>(at.rows) * geo.width;
  std::memset(plane0 + used, 0x80, plane_bytes - used);
  std::memset(plane1 + used, 0x80, plane_bytes - used);
  for (uint32_t r = 0; r < at.rows; ++r) {
    const int64_t iy = static_cast<int64_t>(at.row_begin + r) * s.stride_h + at.py - s.pad_top;
    uint8_t* out0 = plane0 + 4 * static_cast<size_t>(r) * geo.width;
    uint8_t* out1 = plane1 + 4 * static_cast<size_t>(r) * geo.width;
    if (iy < 0 || iy >= s.in_h || 4 * at.c >= s.in_per_group) {
      std::memset(out0, 0x80, 4 * static_cast<size_t>(geo.width));
      std::memset(out1, 0x80, 4 * static_cast<size_t>(geo.width));
      continue;
    }
    const int8_t* rows[4];
    for (uint32_t b = 0; b < 4; ++b) {
      const uint32_t ic = 4 * at.c + b;
      rows[b] = ic < s.in_per_group ? in + ic * s.in_plane + static_cast<size_t>(iy) * s.in_w : nullptr;
    }
    interleave4_pair_avx512(rows, -s.pad_left, s.in_w, geo.width, out0, out1);
  }
}

void build_implicit_source(const ConvShape& s, const ImplicitGeometry& geo, const ImplicitSource& src, const int8_t* in,
                           uint32_t row_begin, uint32_t out_rows, uint32_t c_begin, uint32_t c_end, uint8_t* source) {
  static const bool wide = vnni512_kernels() != nullptr;
  for (uint32_t c = c_begin; c < c_end; ++c) {
    for (uint32_t p = 0; p < s.stride_h * s.stride_w; ++p) {
      if (!geo.phase_used[p]) continue;
      if (wide && s.stride_w == 2 && p % 2 == 0 && geo.phase_used[p + 1]) {
        const PlaneSpot spot{c, p / 2, 0, row_begin, out_rows + geo.extra_rows};
        uint8_t* quad = source + c * src.quad_stride;
        fill_plane_pair(s, geo, in, spot, quad + geo.phase_slot[p] * src.plane_bytes,
                        quad + geo.phase_slot[p + 1] * src.plane_bytes, src.plane_bytes);
        ++p;  // its phase px = 1 is written
        continue;
      }
      const PlaneSpot spot{c, p / s.stride_w, p % s.stride_w, row_begin, out_rows + geo.extra_rows};
      fill_plane(s, geo, in, spot, source + c * src.quad_stride + geo.phase_slot[p] * src.plane_bytes, src.plane_bytes);
    }
  }
}

ImplicitArgs implicit_args(const LayerRun& run, const ConvShape& s, const ImplicitGeometry& geo,
                           const ImplicitSource& src, const ImplicitBlock& at, const uint8_t* source,
                           int32_t* tap_offset) {
  for (uint32_t ky = 0; ky < s.kernel_h; ++ky) {
    for (uint32_t kx = 0; kx < s.kernel_w; ++kx) {
      const uint32_t phase = (ky * s.dilation_h % s.stride_h) * s.stride_w + kx * s.dilation_w % s.stride_w;
      const size_t pixel =
          static_cast<size_t>(ky * s.dilation_h / s.stride_h) * geo.width + kx * s.dilation_w / s.stride_w;
      tap_offset[ky * s.kernel_w + kx] = static_cast<int32_t>(geo.phase_slot[phase] * src.plane_bytes + 4 * pixel);
    }
  }
  const uint32_t first = at.g * s.out_per_group + at.oc_begin;
  const uint32_t taps = s.kernel_h * s.kernel_w;
  ImplicitArgs args{};
  args.packed = run.packed + at.g * packed_quad_words(s.out_per_group, 4 * taps * geo.quads_per_tap) +
                packed_quad_words(at.oc_begin, 4 * taps * geo.quads_per_tap);
  args.m = at.oc_end - at.oc_begin;
  args.source = source;
  args.tap_offset = tap_offset;
  args.taps = taps;
  args.quads_per_tap = geo.quads_per_tap;
  args.quad_stride = src.quad_stride;
  args.pixels = (at.row_end - at.row_begin) * geo.width;
  args.width = geo.width;
  args.valid_w = s.conv_w;
  args.images = 1;
  args.q = conv_requant(run, first);
  args.out = conv_output(run, s, at.n, first) + static_cast<size_t>(at.row_begin) * s.conv_w;
  args.out_stride = s.conv_plane;
  return args;
}

void conv_implicit_block(const LayerRun& run, const ConvShape& s, const ImplicitGeometry& geo,
                         const ImplicitBlock& at) {
  const ImplicitSource src = implicit_source(geo, at.row_end - at.row_begin);
  thread_local std::vector<uint8_t> source;
  if (source.size() < src.bytes) source.resize(src.bytes);
  build_implicit_source(s, geo, src, conv_input(run, s, at.n, at.g), at.row_begin, at.row_end - at.row_begin, 0,
                        geo.quads_per_tap, source.data());
  int32_t tap_offset[abi::kMaxKernel * abi::kMaxKernel];
  run.kernels.implicit_gemm(implicit_args(run, s, geo, src, at, source.data(), tap_offset));
}

}  // namespace tessera::emu
