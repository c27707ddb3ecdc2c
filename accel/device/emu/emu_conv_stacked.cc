// The implicit GEMM on small maps (7x7, 14x14: ResNet's and GoogLeNet's late layers) with several
// images in one pixel panel, as oneDNN blocks over the minibatch. The per-image layout
// (emu_conv_implicit.cc) pads each phase row by the kernel's columns, so a 7x7 map computed 63
// virtual pixels in one 64-pixel panel for 49 outputs, and each image streamed all the layer's
// weights. Here a group of images shares one quad source, built once per layer (not per task):
// per quad of channels, one plane per kernel column kx and row phase py, whose rows are the
// output columns exactly (column ox holds input column ox * stride_w + kx * dilation_w - pad_left),
// so no column is padding. The images' rows follow each other, image_rows per image: padded
// rows py, py + stride_h, ... of the image, where the rows past the last output row that a tap
// reads are the next image's top padding when both are zeros (shared, so a 7x7 map with padding 1
// takes 8 rows, not 9). Tap (ky, kx) is then plane (kx, ky * dh % sh) at a constant offset of
// (ky * dh / sh) rows, and a 64-pixel panel spans images: a batch of 8 7x7 maps is 7 panels for
// 392 outputs (87.5%), where it was 8 of 49 each (77%), and each block of weights is read once
// per group of images.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "accel/device/emu/emu_conv_shape.h"
#include "accel/device/emu/emu_quad_source.h"

namespace tessera::emu {
namespace {

// Quad-source bytes a group of images aims at at most (it stays in L2 over the group's tasks).
static const size_t kGroupSourceBudget = (getenv("TS_BUDGET") ? atoi(getenv("TS_BUDGET")) : 384) * 1024;

uint32_t ceil_div(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

// The stacked source's layout for one layer.
struct Stacked {
  bool py_used[abi::kMaxStride];
  uint32_t py_slot[abi::kMaxStride];
  uint32_t row_phases, planes;  // planes = kernel_w * row_phases, plane (kx, py) at kx * row_phases + py_slot[py]
  uint32_t extra_rows;          // rows past an output row that its taps read
  uint32_t image_rows;          // rows per image (the last output row's taps may read the next image's)
  uint32_t quads;               // quads of input channels
  uint32_t images;              // per group (the last group may have fewer)
  size_t plane_bytes, quad_stride, group_bytes;
};

// Whether image_rows rows per image read right: every row r in [rows, conv_h + extra_rows) that
// some tap of phase py reads is bottom padding of its image (padded row r * sh + py at or past
// pad_top + in_h) and top padding of the next (row (r - rows) * sh + py before pad_top).
bool rows_shareable(const ConvShape& s, const Stacked& k, uint32_t rows) {
  const int64_t bottom = static_cast<int64_t>(s.pad_top) + s.in_h;
  for (uint32_t py = 0; py < s.stride_h; ++py) {
    if (!k.py_used[py]) continue;
    for (uint32_t r = rows; r < s.conv_h + k.extra_rows; ++r) {
      const int64_t own = static_cast<int64_t>(r) * s.stride_h + py, next = static_cast<int64_t>(r - rows) * s.stride_h + py;
      if (own < bottom || next >= s.pad_top) return false;
    }
  }
  return true;
}

Stacked make_stacked(const ConvShape& s, uint32_t batch) {
  Stacked k{};
  for (uint32_t ky = 0; ky < s.kernel_h; ++ky) {
    k.py_used[ky * s.dilation_h % s.stride_h] = true;
    k.extra_rows = std::max(k.extra_rows, ky * s.dilation_h / s.stride_h);
  }
  for (uint32_t py = 0; py < s.stride_h; ++py) {
    k.py_slot[py] = k.row_phases;
    if (k.py_used[py]) ++k.row_phases;
  }
  k.planes = s.kernel_w * k.row_phases;
  k.image_rows = s.conv_h + k.extra_rows;
  while (k.image_rows > s.conv_h && rows_shareable(s, k, k.image_rows - 1)) --k.image_rows;
  k.quads = (s.in_per_group + 3) / 4;
  const size_t image_bytes = static_cast<size_t>(4) * k.quads * k.planes * k.image_rows * s.conv_w;
  k.images = std::clamp<uint32_t>(static_cast<uint32_t>(kGroupSourceBudget / image_bytes), 1, batch);
  // Groups of about equal size: 5 images under a budget of 4 are 3 + 2, not 4 + 1.
  k.images = ceil_div(batch, ceil_div(batch, k.images));
  // A plane: the group's rows, then the rows its last image's taps read past them, then the 15
  // pixels the last 16-pixel step reads past the pixels; x = 0 there.
  const size_t pixels = (static_cast<size_t>(k.images) * k.image_rows + k.extra_rows) * s.conv_w + 16;
  k.plane_bytes = 4 * ((pixels + 15) / 16 * 16);
  k.quad_stride = k.plane_bytes * k.planes;
  k.group_bytes = k.quad_stride * k.quads;
  return k;
}

// Quad c's planes of image group `group` (images [first, first + count)) at `quad`.
void fill_quad(const LayerRun& run, const ConvShape& s, const Stacked& k, uint32_t first, uint32_t count, uint32_t c,
               uint8_t* quad) {
  const size_t row_bytes = 4 * static_cast<size_t>(s.conv_w);
  const size_t used = row_bytes * count * k.image_rows;
  for (uint32_t kx = 0; kx < s.kernel_w; ++kx) {
    for (uint32_t py = 0; py < s.stride_h; ++py) {
      if (!k.py_used[py]) continue;
      uint8_t* plane = quad + (kx * k.row_phases + k.py_slot[py]) * k.plane_bytes;
      for (uint32_t i = 0; i < count; ++i) {
        for (uint32_t r = 0; r < k.image_rows; ++r) {
          const int64_t iy = static_cast<int64_t>(r) * s.stride_h + py - s.pad_top;
          quad_row(s, conv_input(run, s, first + i, 0), c, iy, kx * s.dilation_w, s.conv_w,
                   plane + (static_cast<size_t>(i) * k.image_rows + r) * row_bytes);
        }
      }
      std::memset(plane + used, 0x80, k.plane_bytes - used);
    }
  }
}

// The GEMM of output channels [oc_begin, oc_end) over image group images [first, first + count),
// whose source is at `source`.
void stacked_block(const LayerRun& run, const ConvShape& s, const Stacked& k, const uint8_t* source, uint32_t first,
                   uint32_t count, uint32_t oc_begin, uint32_t oc_end) {
  int32_t tap_offset[abi::kMaxKernel * abi::kMaxKernel];
  for (uint32_t ky = 0; ky < s.kernel_h; ++ky) {
    const uint32_t py = ky * s.dilation_h % s.stride_h, dy = ky * s.dilation_h / s.stride_h;
    for (uint32_t kx = 0; kx < s.kernel_w; ++kx) {
      const size_t plane = kx * k.row_phases + k.py_slot[py];
      tap_offset[ky * s.kernel_w + kx] = static_cast<int32_t>(plane * k.plane_bytes + 4 * static_cast<size_t>(dy) * s.conv_w);
    }
  }
  const uint32_t taps = s.kernel_h * s.kernel_w;
  ImplicitArgs args{};
  args.packed = run.packed + packed_quad_words(oc_begin, 4 * taps * k.quads);
  args.m = oc_end - oc_begin;
  args.source = source;
  args.tap_offset = tap_offset;
  args.taps = taps;
  args.quads_per_tap = k.quads;
  args.quad_stride = k.quad_stride;
  args.pixels = ((count - 1) * k.image_rows + s.conv_h) * s.conv_w;
  args.width = s.conv_w;
  args.valid_w = s.conv_w;
  args.image_rows = k.image_rows;
  args.valid_h = s.conv_h;
  args.q = conv_requant(run, oc_begin);
  args.out = conv_output(run, s, first, oc_begin);
  args.out_stride = s.conv_plane;
  args.image_out_stride = s.fused_pool ? static_cast<size_t>(run.d.out_c) * s.conv_plane : run.image_bytes;
  run.kernels.implicit_gemm(args);
}

}  // namespace

bool conv_uses_stacked(const ConvShape& s, uint32_t batch) {
  // Small maps only: there the per-image layout's padding columns and one-image panels cost most
  // (a 14-wide map pads to 16 columns and to 4 panels of 64 for 196 outputs), and the planes per
  // kernel column (kernel_w times the per-image source) stay small.
  (void)batch;
  static const int mode = getenv("TS_STACK") ? atoi(getenv("TS_STACK")) : 3;
  if (!(mode & (s.stride_h == 1 ? 1 : 2))) return false;
  return s.groups == 1 && s.conv_w <= 14 && s.conv_h <= 14 && s.kernel_w <= 5;
}

bool run_stacked_path(const LayerRun& run, const ConvShape& s) {
  const Stacked k = make_stacked(s, run.batch);
  const uint32_t groups = ceil_div(run.batch, k.images);
  // The caller's buffer (the tasks run on the pool's threads too: they get its address, not
  // their own thread_local).
  thread_local std::vector<uint8_t> buffer;
  if (buffer.size() < groups * k.group_bytes) buffer.resize(groups * k.group_bytes);
  uint8_t* const source = buffer.data();
  const uint32_t threads = run.pool.size();
  // Source tasks: quads in chunks, about 4 tasks per thread.
  const uint32_t quad_chunk = ceil_div(k.quads, ceil_div(4 * threads, groups));
  const uint32_t quad_chunks = ceil_div(k.quads, quad_chunk);
  const auto build = [&](size_t t) {
    const auto group = static_cast<uint32_t>(t / quad_chunks);
    const uint32_t first = group * k.images, count = std::min(k.images, run.batch - first);
    const uint32_t c_end = std::min(k.quads, static_cast<uint32_t>(t % quad_chunks + 1) * quad_chunk);
    for (uint32_t c = static_cast<uint32_t>(t % quad_chunks) * quad_chunk; c < c_end; ++c) {
      fill_quad(run, s, k, first, count, c, source + group * k.group_bytes + c * k.quad_stride);
    }
  };
  if (!run.pool.parallel_for(static_cast<size_t>(groups) * quad_chunks, build, run.deadline)) return false;
  // GEMM tasks: output channels in chunks of whole micro-kernel blocks, about 4 tasks per thread.
  const uint32_t parts = std::min(ceil_div(4 * threads, groups), ceil_div(s.out_per_group, kVnniRows));
  const uint32_t oc_chunk = ceil_div(ceil_div(s.out_per_group, parts), kVnniRows) * kVnniRows;
  const uint32_t oc_chunks = ceil_div(s.out_per_group, oc_chunk);
  const auto gemm = [&](size_t t) {
    const auto group = static_cast<uint32_t>(t / oc_chunks);
    const uint32_t first = group * k.images, count = std::min(k.images, run.batch - first);
    const uint32_t oc_begin = static_cast<uint32_t>(t % oc_chunks) * oc_chunk;
    stacked_block(run, s, k, source + group * k.group_bytes, first, count, oc_begin,
                  std::min(s.out_per_group, oc_begin + oc_chunk));
  };
  return run.pool.parallel_for(static_cast<size_t>(groups) * oc_chunks, gemm, run.deadline);
}

}  // namespace tessera::emu
