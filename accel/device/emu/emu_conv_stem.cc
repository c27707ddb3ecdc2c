// The stem path of kOpConv: a 3-channel conv (ResNet-18's and GoogLeNet's 7x7/2 over RGB) on the
// kernels' stem GEMM (an implicit GEMM: emu_kernels.h, ImplicitArgs) with quads formed along the kernel row.
// Channel quads (emu_conv_implicit.cc) pad 3 channels to 4, so a quarter of the MACs multiply
// zeros; here quad j of channel c holds kernel columns 4j .. 4j + 3 of one kernel row, so a 7x7
// stem has 2 quads per channel and row (the 8th column's weight zero): 42 quads where channel
// quads take 49, 87.5% of the products useful instead of 75%.
//
// The source: per channel and row stride phase py, rows of `width` pixels, pixel x of phase row r
// holding the 4 bytes x + 128 of padded input columns x * stride_w .. x * stride_w + 3 of padded
// row (row_begin + r) * stride_h + py. Quad j of output pixel x is then pixel x + j * 4 / stride_w
// (stride_w 1, 2 or 4), so tap (ky, j) is a constant offset, as the implicit GEMM wants; each input
// byte appears 4 / stride_w times, where channel quads store it once per column phase.
//
// A fused max pool is applied per task: a task owns pooled rows, computes the conv rows their
// windows read (the row shared with the next task computed twice) into a per-thread scratch that
// stays in L2, and pools them from there; the layer's conv output never goes through memory.
#include "accel/device/emu/emu_conv_stem.h"

#include <algorithm>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace tessera::emu {
namespace {

// Input channels of a stem (quads_per_tap of its implicit GEMM).
constexpr uint32_t kStemChannels = 3;
// Pixels past a plane's rows the GEMM may read: its last 16-pixel step plus the largest column
// offset of a tap (< 3 quads of 4 columns).
constexpr uint32_t kStemSlack = 16 + 12 + 16;
// Conv output bytes (all channels) a pooled task keeps in its scratch: well inside L2.
constexpr size_t kStemScratchBudget = 256 * 1024;
// Source bytes an unpooled task aims at at most.
constexpr size_t kStemSourceBudget = 192 * 1024;
// Tasks per thread the rows are split into (each pooled task computes one conv row twice).
constexpr uint32_t kStemTasksPerThread = 2;

// The source's layout for a conv (see the top of the file).
struct StemGeometry {
  uint32_t quads_per_row;  // quads of 4 kernel columns: ceil(kernel_w / 4)
  uint32_t col_step;       // pixels between quad j and j + 1: 4 / stride_w
  uint32_t width;          // pixels per phase row: conv_w + (quads_per_row - 1) * col_step
  uint32_t extra_rows;     // phase rows past a task's output rows that its taps read
  uint32_t phases;         // row phases some kernel row reads
  uint32_t phase_slot[abi::kMaxStride];
  bool phase_used[abi::kMaxStride];
};

StemGeometry stem_geometry(const ConvShape& s) {
  StemGeometry geo{};
  geo.quads_per_row = (s.kernel_w + 3) / 4;
  geo.col_step = 4 / s.stride_w;
  geo.width = s.conv_w + (geo.quads_per_row - 1) * geo.col_step;
  for (uint32_t ky = 0; ky < s.kernel_h; ++ky) {
    geo.extra_rows = std::max(geo.extra_rows, ky * s.dilation_h / s.stride_h);
    geo.phase_used[ky * s.dilation_h % s.stride_h] = true;
  }
  for (uint32_t p = 0; p < s.stride_h; ++p) {
    geo.phase_slot[p] = geo.phases;
    if (geo.phase_used[p]) ++geo.phases;
  }
  return geo;
}

// out[4x + b] = line[x * stride + b] ^ 0x80 for x < width, b < 4 (line readable up to
// stride * width + 16).
void expand_row(const int8_t* line, uint32_t stride, uint32_t width, uint8_t* out) {
  uint32_t x = 0;
#if defined(__x86_64__)
  const __m128i flip = _mm_set1_epi8(static_cast<char>(0x80));
  const auto load = [&](uint32_t at) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(line + at)); };
  const auto store = [&](uint32_t pixel, __m128i v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 4 * pixel), _mm_xor_si128(v, flip));
  };
  if (stride == 2) {
    // Pixel x is 16-bit words x and x + 1 of the line.
    for (; x + 8 <= width; x += 8) {
      const __m128i a = load(2 * x), b = load(2 * x + 2);
      store(x, _mm_unpacklo_epi16(a, b));
      store(x + 4, _mm_unpackhi_epi16(a, b));
    }
  } else if (stride == 1) {
    // Pixel x is bytes x .. x + 3: the line and its shifts by 1, 2, 3 interleaved.
    for (; x + 16 <= width; x += 16) {
      const __m128i a = load(x), b = load(x + 1), c = load(x + 2), d = load(x + 3);
      const __m128i ab_lo = _mm_unpacklo_epi8(a, b), ab_hi = _mm_unpackhi_epi8(a, b);
      const __m128i cd_lo = _mm_unpacklo_epi8(c, d), cd_hi = _mm_unpackhi_epi8(c, d);
      store(x, _mm_unpacklo_epi16(ab_lo, cd_lo));
      store(x + 4, _mm_unpackhi_epi16(ab_lo, cd_lo));
      store(x + 8, _mm_unpacklo_epi16(ab_hi, cd_hi));
      store(x + 12, _mm_unpackhi_epi16(ab_hi, cd_hi));
    }
  } else if (stride == 4) {
    for (; x + 4 <= width; x += 4) store(x, load(4 * x));
  }
#endif
  for (; x < width; ++x) {
    for (uint32_t b = 0; b < 4; ++b) out[4 * x + b] = static_cast<uint8_t>(line[x * stride + b]) ^ 0x80u;
  }
}

// Writes the plane of input channel `plane_in` (the channel's in_h x in_w plane) for row phase
// py and phase rows [row_begin, row_begin + rows); plane_bytes past the rows are x = 0.
void fill_stem_plane(const ConvShape& s, const StemGeometry& geo, const int8_t* plane_in, uint32_t py,
                     uint32_t row_begin, uint32_t rows, uint8_t* plane, size_t plane_bytes) {
  const size_t row_bytes = 4 * static_cast<size_t>(geo.width);
  std::memset(plane + rows * row_bytes, 0x80, plane_bytes - rows * row_bytes);
  // The padded row: line[k] = input column k - pad_left, zero outside the input.
  const size_t line_bytes = static_cast<size_t>(s.stride_w) * geo.width + 32;
  thread_local std::vector<int8_t> line;
  if (line.size() < line_bytes) line.resize(line_bytes);
  const auto first = static_cast<size_t>(std::clamp<int64_t>(s.pad_left, 0, line_bytes));
  const auto end =
      static_cast<size_t>(std::clamp<int64_t>(static_cast<int64_t>(s.in_w) + s.pad_left, first, line_bytes));
  std::memset(line.data(), 0, first);
  std::memset(line.data() + end, 0, line_bytes - end);
  for (uint32_t r = 0; r < rows; ++r) {
    const int64_t iy = static_cast<int64_t>(row_begin + r) * s.stride_h + py - s.pad_top;
    uint8_t* out = plane + r * row_bytes;
    if (iy < 0 || iy >= s.in_h) {
      std::memset(out, 0x80, row_bytes);
      continue;
    }
    std::memcpy(line.data() + first, plane_in + static_cast<size_t>(iy) * s.in_w + (first - s.pad_left), end - first);
    expand_row(line.data(), s.stride_w, geo.width, out);
  }
}

// Conv rows [row_begin, row_end) of every output channel of image n: output channel oc's pixel
// (y, x) goes to out[oc * out_stride + (y - row_begin) * conv_w + x].
void stem_conv_rows(const LayerRun& run, const ConvShape& s, const StemGeometry& geo, uint32_t n, uint32_t row_begin,
                    uint32_t row_end, int8_t* out, size_t out_stride) {
  const uint32_t rows = row_end - row_begin + geo.extra_rows;
  const size_t plane_pixels = static_cast<size_t>(rows) * geo.width + kStemSlack;
  const size_t plane_bytes = 4 * ((plane_pixels + 15) / 16 * 16);
  const size_t quad_stride = plane_bytes * geo.phases;
  thread_local std::vector<uint8_t> source;
  if (source.size() < quad_stride * kStemChannels) source.resize(quad_stride * kStemChannels);
  const int8_t* in = conv_input(run, s, n, 0);
  for (uint32_t c = 0; c < kStemChannels; ++c) {
    for (uint32_t py = 0; py < s.stride_h; ++py) {
      if (!geo.phase_used[py]) continue;
      fill_stem_plane(s, geo, in + c * s.in_plane, py, row_begin, rows,
                      source.data() + c * quad_stride + geo.phase_slot[py] * plane_bytes, plane_bytes);
    }
  }
  // Tap (ky, j): phase (ky * dh) % sh, phase row + (ky * dh) / sh, pixel + j * col_step.
  int32_t tap_offset[abi::kMaxKernel * ((abi::kMaxKernel + 3) / 4)];
  for (uint32_t ky = 0; ky < s.kernel_h; ++ky) {
    const uint32_t phase = ky * s.dilation_h % s.stride_h;
    for (uint32_t j = 0; j < geo.quads_per_row; ++j) {
      const size_t pixel = static_cast<size_t>(ky * s.dilation_h / s.stride_h) * geo.width + j * geo.col_step;
      tap_offset[ky * geo.quads_per_row + j] = static_cast<int32_t>(geo.phase_slot[phase] * plane_bytes + 4 * pixel);
    }
  }
  ImplicitArgs args{};
  args.packed = run.packed;
  args.m = s.out_per_group;
  args.source = source.data();
  args.tap_offset = tap_offset;
  args.taps = s.kernel_h * geo.quads_per_row;
  args.quads_per_tap = kStemChannels;
  args.quad_stride = quad_stride;
  args.pixels = (row_end - row_begin) * geo.width;
  args.width = geo.width;
  args.valid_w = s.conv_w;
  args.q = conv_requant(run, 0);
  args.out = out;
  args.out_stride = out_stride;
  run.kernels.stem_gemm(args);
}

// Pooled rows [pool_begin, pool_end) of every channel of image n: the conv rows their windows
// read into the thread's scratch, then the max pool from there into the layer's output.
void stem_pooled_rows(const LayerRun& run, const ConvShape& s, const StemGeometry& geo, uint32_t n, uint32_t pool_begin,
                      uint32_t pool_end) {
  const abi::LayerDesc& d = run.d;
  const int64_t start = static_cast<int64_t>(pool_begin) * d.pool_stride_h - d.pool_pad_top;
  const auto lo = static_cast<uint32_t>(std::clamp<int64_t>(start, 0, s.conv_h));
  const int64_t last_end = static_cast<int64_t>(pool_end - 1) * d.pool_stride_h - d.pool_pad_top + d.pool_h;
  const auto hi = static_cast<uint32_t>(std::clamp<int64_t>(last_end, lo, s.conv_h));
  const size_t plane = static_cast<size_t>(hi - lo) * s.conv_w;
  thread_local std::vector<int8_t> scratch;
  if (scratch.size() < plane * d.out_c) scratch.resize(plane * d.out_c);
  if (hi > lo) stem_conv_rows(run, s, geo, n, lo, hi, scratch.data(), plane);
  // The windows in the scratch's rows: pooled row i starts at scratch row i * stride - pad.
  const auto pad = static_cast<uint32_t>(std::max<int64_t>(0, lo - start));
  const PoolWindow win{d.pool_h, d.pool_w, d.pool_stride_h, d.pool_stride_w, pad, d.pool_pad_left};
  const size_t out_plane = static_cast<size_t>(d.out_h) * d.out_w;
  int8_t* out = run.arena + n * run.image_bytes + d.out_offset + static_cast<size_t>(d.out_channel_base) * out_plane +
                static_cast<size_t>(pool_begin) * d.out_w;
  for (uint32_t oc = 0; oc < d.out_c; ++oc) {
    max_pool_plane(run.kernels, scratch.data() + oc * plane, hi - lo, s.conv_w, win, out + oc * out_plane,
                   pool_end - pool_begin, d.out_w);
  }
}

}  // namespace

bool conv_uses_stem(const EmuKernels& kernels, const abi::LayerDesc& d) {
  if (kernels.stem_gemm == nullptr || kernels.pack == nullptr) return false;
  if (d.groups != 1 || d.in_c != kStemChannels || d.out_c < 4) return false;
  if (d.dilation_w != 1 || (d.stride_w != 1 && d.stride_w != 2 && d.stride_w != 4)) return false;
  return kStemChannels * ((d.kernel_w + 3) / 4) < d.kernel_w;
}

size_t packed_stem_words(const abi::LayerDesc& d) {
  return packed_quad_words(d.out_c, 4 * kStemChannels * d.kernel_h * ((d.kernel_w + 3) / 4));
}

void pack_stem_weights(const abi::LayerDesc& d, const int8_t* weights, int32_t* packed) {
  // As pack_tap_quads of virtual weights: 4 * 3 "channels" (channel c's columns 4j .. 4j + 3 as
  // channels 4c .. 4c + 3, zero past kernel_w) over kernel_h * quads_per_row taps (ky, j).
  const uint32_t per_row = (d.kernel_w + 3) / 4, taps = d.kernel_h * per_row, channels = 4 * kStemChannels;
  std::vector<int8_t> virt(static_cast<size_t>(d.out_c) * channels * taps, 0);
  const int8_t* w = weights + d.weight_offset;
  for (uint32_t o = 0; o < d.out_c; ++o) {
    for (uint32_t c = 0; c < kStemChannels; ++c) {
      for (uint32_t ky = 0; ky < d.kernel_h; ++ky) {
        for (uint32_t kx = 0; kx < d.kernel_w; ++kx) {
          const size_t from = ((static_cast<size_t>(o) * kStemChannels + c) * d.kernel_h + ky) * d.kernel_w + kx;
          const size_t to = (static_cast<size_t>(o) * channels + 4 * c + kx % 4) * taps + ky * per_row + kx / 4;
          virt[to] = w[from];
        }
      }
    }
  }
  pack_tap_quads(virt.data(), d.out_c, channels, taps, packed);
}

bool run_stem_path(const LayerRun& run, const ConvShape& s) {
  const StemGeometry geo = stem_geometry(s);
  const uint32_t threads = run.pool.size();
  const uint32_t blocks_wanted = ceil_div(kStemTasksPerThread * threads, run.batch);
  if (s.fused_pool) {
    const uint32_t out_h = run.d.out_h;
    if (out_h == 0 || run.d.out_w == 0) return true;
    const auto max_conv_rows = static_cast<uint32_t>(
        std::clamp<size_t>(kStemScratchBudget / (static_cast<size_t>(run.d.out_c) * s.conv_w), 1, UINT32_MAX));
    const uint32_t max_rows = std::max(1u, max_conv_rows / run.d.pool_stride_h);
    // Even blocks: as many as wanted, or as the scratch budget needs.
    const uint32_t rows = ceil_div(out_h, std::max(blocks_wanted, ceil_div(out_h, max_rows)));
    const uint32_t blocks = ceil_div(out_h, rows);
    const auto task = [&](size_t t) {
      const auto b = static_cast<uint32_t>(t % blocks), n = static_cast<uint32_t>(t / blocks);
      stem_pooled_rows(run, s, geo, n, b * rows, std::min(out_h, (b + 1) * rows));
    };
    return run.pool.parallel_for(static_cast<size_t>(run.batch) * blocks, task, run.deadline);
  }
  const size_t row_bytes = static_cast<size_t>(4) * kStemChannels * geo.phases * geo.width;
  const auto budget_rows = static_cast<uint32_t>(std::clamp<size_t>(kStemSourceBudget / row_bytes, 1, UINT32_MAX));
  const uint32_t min_rows = std::min(s.conv_h, ceil_div(64, geo.width));
  const uint32_t max_rows = std::max(min_rows, budget_rows > geo.extra_rows ? budget_rows - geo.extra_rows : 1);
  const uint32_t rows = std::clamp(ceil_div(s.conv_h, blocks_wanted), std::max(1u, min_rows), std::max(1u, max_rows));
  const uint32_t blocks = ceil_div(s.conv_h, rows);
  const auto task = [&](size_t t) {
    const auto b = static_cast<uint32_t>(t % blocks), n = static_cast<uint32_t>(t / blocks);
    const uint32_t begin = b * rows, end = std::min(s.conv_h, (b + 1) * rows);
    stem_conv_rows(run, s, geo, n, begin, end, conv_output(run, s, n, 0) + static_cast<size_t>(begin) * s.conv_w,
                   s.conv_plane);
  };
  return run.pool.parallel_for(static_cast<size_t>(run.batch) * blocks, task, run.deadline);
}

}  // namespace tessera::emu
