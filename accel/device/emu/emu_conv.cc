// kOpConv: geometry, weight packing and the split of a layer into pool tasks. The arithmetic is
// in emu_conv_implicit.cc (implicit GEMM, AVX-512 VNNI; on small maps emu_conv_compact.cc and
// emu_conv_grouped.cc), emu_conv_gemm.cc (im2col + GEMM, the
// others and few-channel layers) and emu_conv_direct.cc (thin groups).
#include <algorithm>
#include <cmath>

#include "accel/device/emu/emu_conv_shape.h"
#include "accel/device/emu/emu_conv_stem.h"

namespace tessera::emu {
namespace {

// im2col bytes one GEMM task aims at (fits L2 together with the packed weights).
constexpr size_t kColumnBudget = 128 * 1024;
// Output pixels a GEMM task aims at at least: one 64-pixel panel of the AVX-512 VNNI GEMM.
constexpr uint32_t kMinTaskPixels = 64;
// Output channels per group below which the direct path wins.
constexpr uint32_t kMinGemmChannels = 4;
// MACs a direct-path task aims at at most (~1 ms of the old per-row direct path on one core, about
// a quarter of that on whole planes): a thin layer over a large input is split by rows as well as
// channels, so a run's deadline, which the pool checks before each task, is kept to about that (a
// 256-channel 3x3 conv on 256x256 into one channel was one 26 ms task). Depthwise layers' channel
// chunks stay whole (a 112x112 plane is 113 k MACs).
constexpr double kDirectTaskMacs = 4 << 20;

// Conv rows (or columns) the layer needs. Without a fused pool the conv output is the layer
// output, which the kernel sizes by out_h/out_w. With one, only the part some pool window
// covers: conv_h, cut at the last window's end (windows never read past it either).
uint32_t conv_extent(uint32_t conv, uint32_t out, uint32_t pool_stride, uint32_t pool_pad, uint32_t pool, bool pooled) {
  if (!pooled) return out;
  if (out == 0) return 0;
  const int64_t end = static_cast<int64_t>(out - 1) * pool_stride - pool_pad + pool;
  return static_cast<uint32_t>(std::clamp<int64_t>(end, 0, conv));
}

bool run_gemm_path(const LayerRun& run, const ConvShape& s) {
  const uint32_t threads = run.pool.size();
  const uint32_t units = run.batch * s.groups;
  // Rows per task: bounded by the im2col budget, and small enough for ~4 tasks per thread, but
  // at least kMinTaskPixels where the plane has them (a small map, batch 1: split by channels
  // below rather than into rows of a few pixels, which would leave the GEMM's panels mostly empty).
  const size_t max_pixels = std::clamp<size_t>(kColumnBudget / s.k, 64, 1024);
  const uint32_t min_rows = std::min(s.conv_h, ceil_div(kMinTaskPixels, s.conv_w));
  const uint32_t max_rows = std::max(min_rows, static_cast<uint32_t>(max_pixels / s.conv_w));
  const uint32_t blocks_wanted = ceil_div(4 * threads, units);
  const uint32_t rows = std::clamp(ceil_div(s.conv_h, blocks_wanted), std::max(1u, min_rows), std::max(1u, max_rows));
  const uint32_t row_blocks = ceil_div(s.conv_h, rows);
  // Few rows (late layers, 1x1 maps): split output channels too, in whole micro-kernel blocks.
  uint32_t oc_chunk = s.out_per_group;
  const uint32_t tasks = units * row_blocks;
  if (tasks < 2 * threads) {
    const uint32_t block_rows = run.kernels.gemm_rows;
    const uint32_t parts = std::min(ceil_div(2 * threads, tasks), ceil_div(s.out_per_group, 4 * block_rows));
    oc_chunk = ceil_div(ceil_div(s.out_per_group, parts), block_rows) * block_rows;
  }
  const uint32_t oc_chunks = ceil_div(s.out_per_group, oc_chunk);
  const auto block = [&](size_t t) {
    const uint32_t c = static_cast<uint32_t>(t % oc_chunks);
    const uint32_t b = static_cast<uint32_t>(t / oc_chunks % row_blocks);
    const uint32_t u = static_cast<uint32_t>(t / oc_chunks / row_blocks);
    conv_gemm_block(run, s, u / s.groups, u % s.groups, b * rows, std::min(s.conv_h, (b + 1) * rows), c * oc_chunk,
                    std::min(s.out_per_group, (c + 1) * oc_chunk));
  };
  return run.pool.parallel_for(static_cast<size_t>(units) * row_blocks * oc_chunks, block, run.deadline);
}

// Quad-source bytes an implicit-GEMM task aims at at most (L2, with the weights it streams).
constexpr size_t kSourceBudget = 192 * 1024;

bool run_implicit_path(const LayerRun& run, const ConvShape& s) {
  const ImplicitGeometry geo = implicit_geometry(s);
  if (conv_uses_compact(s, geo, run.batch)) return run_compact_path(run, s, geo);
  if (conv_uses_grouped(s, geo, run.batch, run.pool.size())) return run_grouped_path(run, s, geo);
  const uint32_t threads = run.pool.size();
  const uint32_t units = run.batch * s.groups;
  const size_t row_bytes = static_cast<size_t>(4) * geo.quads_per_tap * geo.phases * geo.width;
  const uint32_t min_rows = std::min(s.conv_h, ceil_div(kMinTaskPixels, geo.width));
  const auto budget_rows = static_cast<uint32_t>(std::min<size_t>(kSourceBudget / row_bytes, UINT32_MAX));
  const uint32_t max_rows = std::max(min_rows, budget_rows > geo.extra_rows ? budget_rows - geo.extra_rows : 1);
  const uint32_t blocks_wanted = ceil_div(4 * threads, units);
  const uint32_t rows = std::clamp(ceil_div(s.conv_h, blocks_wanted), std::max(1u, min_rows), std::max(1u, max_rows));
  const uint32_t row_blocks = ceil_div(s.conv_h, rows);
  uint32_t oc_chunk = s.out_per_group;
  const uint32_t tasks = units * row_blocks;
  // Few tasks (batch 1's small maps): split channels until ~4 per thread, so the threads' shares
  // even out (7 row blocks on 2 threads left one idle a seventh of the layer); each chunk builds
  // its own source, which costs little beside its GEMM.
  if (tasks < 4 * threads) {
    const uint32_t parts = std::min(ceil_div(4 * threads, tasks), ceil_div(s.out_per_group, 4 * kVnniRows));
    oc_chunk = ceil_div(ceil_div(s.out_per_group, parts), kVnniRows) * kVnniRows;
  }
  const uint32_t oc_chunks = ceil_div(s.out_per_group, oc_chunk);
  const auto block = [&](size_t t) {
    const uint32_t c = static_cast<uint32_t>(t % oc_chunks);
    const uint32_t b = static_cast<uint32_t>(t / oc_chunks % row_blocks);
    const uint32_t u = static_cast<uint32_t>(t / oc_chunks / row_blocks);
    const ImplicitBlock at{u / s.groups, u % s.groups,
                           b * rows,     std::min(s.conv_h, (b + 1) * rows),
                           c * oc_chunk, std::min(s.out_per_group, (c + 1) * oc_chunk)};
    conv_implicit_block(run, s, geo, at);
  };
  return run.pool.parallel_for(static_cast<size_t>(units) * row_blocks * oc_chunks, block, run.deadline);
}

bool run_direct_path(const LayerRun& run, const ConvShape& s) {
  const Chunks chunks = make_chunks(run.d.out_c, ceil_div(4 * run.pool.size(), run.batch));
  const size_t per_image = chunks.num();
  const double chunk_macs = static_cast<double>(chunks.size) * s.conv_h * s.conv_w * s.k;
  const auto wanted_blocks =
      static_cast<uint32_t>(std::clamp(std::ceil(chunk_macs / kDirectTaskMacs), 1.0, 1.0 * s.conv_h));
  const uint32_t rows = ceil_div(s.conv_h, wanted_blocks);
  const uint32_t row_blocks = ceil_div(s.conv_h, rows);
  const auto block = [&](size_t t) {
    const size_t c = t % per_image;
    const auto b = static_cast<uint32_t>(t / per_image % row_blocks);
    conv_direct_channels(run, s, static_cast<uint32_t>(t / per_image / row_blocks),
                         static_cast<uint32_t>(chunks.begin(c)), static_cast<uint32_t>(chunks.end(c)), b * rows,
                         std::min(s.conv_h, (b + 1) * rows));
  };
  return run.pool.parallel_for(static_cast<size_t>(run.batch) * per_image * row_blocks, block, run.deadline);
}

bool run_fused_pool(const LayerRun& run, const ConvShape& s) {
  const abi::LayerDesc& d = run.d;
  const PoolWindow win{d.pool_h, d.pool_w, d.pool_stride_h, d.pool_stride_w, d.pool_pad_top, d.pool_pad_left};
  const size_t out_plane = static_cast<size_t>(d.out_h) * d.out_w;
  const auto pool_channel = [&](size_t t) {
    const uint32_t n = static_cast<uint32_t>(t / d.out_c), oc = static_cast<uint32_t>(t % d.out_c);
    int8_t* dst = run.arena + n * run.image_bytes + d.out_offset + (d.out_channel_base + oc) * out_plane;
    max_pool_plane(run.kernels, conv_output(run, s, n, oc), s.conv_h, s.conv_w, win, dst, d.out_h, d.out_w);
  };
  return run.pool.parallel_for(static_cast<size_t>(run.batch) * d.out_c, pool_channel, run.deadline);
}

}  // namespace

ConvShape make_conv_shape(const abi::LayerDesc& d) {
  ConvShape s{};
  s.in_h = d.in_h;
  s.in_w = d.in_w;
  s.fused_pool = d.pool_kind == abi::kPoolMax;
  s.conv_h = conv_extent(d.conv_h, d.out_h, d.pool_stride_h, d.pool_pad_top, d.pool_h, s.fused_pool);
  s.conv_w = conv_extent(d.conv_w, d.out_w, d.pool_stride_w, d.pool_pad_left, d.pool_w, s.fused_pool);
  s.kernel_h = d.kernel_h;
  s.kernel_w = d.kernel_w;
  s.stride_h = d.stride_h;
  s.stride_w = d.stride_w;
  s.dilation_h = d.dilation_h;
  s.dilation_w = d.dilation_w;
  s.pad_top = static_cast<int32_t>(d.pad_top);
  s.pad_left = static_cast<int32_t>(d.pad_left);
  s.groups = d.groups;
  s.in_per_group = d.in_c / d.groups;
  s.out_per_group = d.out_c / d.groups;
  s.k = s.in_per_group * d.kernel_h * d.kernel_w;
  s.in_plane = static_cast<size_t>(d.in_h) * d.in_w;
  s.conv_plane = static_cast<size_t>(s.conv_h) * s.conv_w;
  for (uint32_t kx = 0; kx < d.kernel_w; ++kx) {
    // Input column of output column ox: ox * stride + kx * dilation - pad_left, in [0, in_w).
    const int64_t offset = static_cast<int64_t>(kx) * d.dilation_w - d.pad_left;
    const int64_t first = offset >= 0 ? 0 : (-offset + d.stride_w - 1) / d.stride_w;
    const int64_t last_ix = static_cast<int64_t>(d.in_w) - 1 - offset;  // ox * stride <= last_ix
    const int64_t end = last_ix < 0 ? 0 : last_ix / d.stride_w + 1;
    s.ox_begin[kx] = static_cast<uint32_t>(std::min<int64_t>(first, s.conv_w));
    s.ox_end[kx] = static_cast<uint32_t>(std::clamp<int64_t>(end, s.ox_begin[kx], s.conv_w));
  }
  return s;
}

size_t conv_scratch_bytes(const EmuKernels& kernels, const abi::LayerDesc& d) {
  // The stem path pools each task's rows from a scratch of its own thread's.
  if (d.pool_kind != abi::kPoolMax || conv_uses_stem(kernels, d)) return 0;
  const ConvShape s = make_conv_shape(d);
  return static_cast<size_t>(d.out_c) * s.conv_plane;
}

bool conv_uses_gemm(const abi::LayerDesc& d) { return d.out_c / d.groups >= kMinGemmChannels; }

size_t packed_conv_words(const EmuKernels& kernels, const abi::LayerDesc& d) {
  if (conv_uses_stem(kernels, d)) return packed_stem_words(d);
  if (conv_uses_implicit(kernels, d)) {
    const uint32_t taps = d.kernel_h * d.kernel_w, per_tap = (d.in_c / d.groups + 3) / 4;
    return d.groups * packed_quad_words(d.out_c / d.groups, 4 * taps * per_tap);
  }
  if (!conv_uses_gemm(d) || kernels.pack == nullptr) return 0;
  return d.groups * kernels.packed_words(d.out_c / d.groups, d.in_c / d.groups * d.kernel_h * d.kernel_w);
}

void pack_conv_weights(const EmuKernels& kernels, const abi::LayerDesc& d, const int8_t* weights, int32_t* packed) {
  if (conv_uses_stem(kernels, d)) return pack_stem_weights(d, weights, packed);
  if (conv_uses_implicit(kernels, d)) {
    const uint32_t m = d.out_c / d.groups, channels = d.in_c / d.groups, taps = d.kernel_h * d.kernel_w;
    const size_t words = packed_quad_words(m, 4 * taps * ((channels + 3) / 4));
    for (uint32_t g = 0; g < d.groups; ++g) {
      pack_tap_quads(weights + d.weight_offset + static_cast<size_t>(g) * m * channels * taps, m, channels, taps,
                     packed + g * words);
    }
    return;
  }
  if (!conv_uses_gemm(d) || kernels.pack == nullptr) return;
  const uint32_t m = d.out_c / d.groups, k = d.in_c / d.groups * d.kernel_h * d.kernel_w;
  for (uint32_t g = 0; g < d.groups; ++g) {
    kernels.pack(weights + d.weight_offset + static_cast<size_t>(g) * m * k, m, k,
                 packed + g * kernels.packed_words(m, k));
  }
}

bool run_conv(const LayerRun& run) {
  const ConvShape s = make_conv_shape(run.d);
  if (s.conv_plane != 0 && conv_uses_stem(run.kernels, run.d)) return run_stem_path(run, s);  // pool included
  // Without conv output there is nothing to compute; a fused pool still writes -128 (windows
  // with no valid position).
  const bool computed = s.conv_plane == 0                        ? true
                        : conv_uses_implicit(run.kernels, run.d) ? run_implicit_path(run, s)
                        : conv_uses_gemm(run.d)                  ? run_gemm_path(run, s)
                                                                 : run_direct_path(run, s);
  if (!computed) return false;
  return !s.fused_pool || run_fused_pool(run, s);
}

}  // namespace tessera::emu
