// The implicit GEMM on small maps with the images' output pixels end to end (7x7 and 14x14:
// ResNet's and GoogLeNet's late layers, batch 2 and up). In the per-image layout
// (emu_conv_implicit.cc) each row of the map is computed over the padding columns its taps
// read, so a 7x7 map's 63 virtual pixels fill a 64-lane panel for 49 outputs and a 14x14 map
// takes 224 lanes for 196. Here each tap's quads hold output pixels only, the images one after
// another: an im2col in the quad layout. It is taps times the input's bytes, which is small
// beside the MACs where it is used (a 3x3 conv of 512 channels on 7x7 at batch 8: a 1.8 MB
// source for 925 M MACs), and 8 images' 392 pixels take 400 lanes.
//
// A layer runs over chunks of images whose source fits kCompactBudget. Tasks first build one
// image's per-image source for a chunk of its quads and copy every tap's output pixels from it;
// then GEMM tasks take a group of panels and a chunk of output channels, each block of weights
// read once for all of the group's panels.
#include <algorithm>
#include <cstring>
#include <vector>

#include "accel/device/emu/emu_conv_shape.h"
#include "accel/device/emu/emu_quad_source.h"

namespace tessera::emu {
namespace {

// Bytes of compact source a chunk of images aims at at most.
constexpr size_t kCompactBudget = 8u << 20;
// Compact-source bytes a GEMM task aims at at most (its panels stay in L2 while its weights go by).
constexpr size_t kGroupBudget = 640 * 1024;
// Output channels from which a layer takes this path.
constexpr uint32_t kMinChannels = 128;
// Pixels of one panel of the implicit GEMM.
constexpr uint32_t kPanel = kImplicitPanel;

size_t round16(size_t n) { return (n + 15) / 16 * 16; }

}  // namespace

bool conv_uses_compact(const ConvShape& s, const ImplicitGeometry& geo, uint32_t batch) {
  // Groups stay per image (no zoo model has grouped convs on the implicit path). So do layers of
  // few output channels, whose MACs do not pay for the copy: GoogLeNet's 3x3 convs of 64 channels
  // on 14x14 and 7x7 maps took 25-45% longer this way at batch 8.
  if (s.groups != 1 || s.out_per_group < kMinChannels) return false;
  // Lanes computed, per-image rows against pixels end to end: at least a tenth fewer. A 28x28 map
  // (840 virtual pixels for 784) stays on the per-image layout, whose source is the input's size.
  const size_t per_image = round16(static_cast<size_t>(s.conv_h) * geo.width) * batch;
  const size_t compact = round16(s.conv_plane * batch);
  return 10 * compact <= 9 * per_image;
}

namespace {

// One chunk of images of a layer on this path: images [n0, n0 + count), `pixels` of them end to
// end in `panels` panels at `source`.
struct CompactChunk {
  uint32_t n0, count, pixels, panels;
  uint8_t* source;
};

// The layer's geometry on this path: one image's per-image source and its tap offsets (those of
// the per-image layout); the compact layout, panel-major so that the GEMM streams each panel's
// quads in order (the kPanel pixels of panel P at P * panel_stride, [tap][quad][pixel] within it,
// tap t at tap_offset[t]); and the implicit GEMM's arguments common to every task (the weights'
// start, the requantisation and output of channel 0 of image 0, the output strides, the layout).
struct CompactLayer {
  ImplicitSource src;
  uint32_t taps, quads;
  size_t panel_stride;
  int32_t image_tap_offset[abi::kMaxKernel * abi::kMaxKernel];
  int32_t tap_offset[abi::kMaxKernel * abi::kMaxKernel];
  ImplicitArgs args;
};

// Source tasks: an image's quads in chunks, about 4 tasks per thread. Each builds the image's
// per-image source of its quads and copies every tap's output pixels into the chunk's panels.
bool build_chunk(const LayerRun& run, const ConvShape& s, const ImplicitGeometry& geo, const CompactLayer& layer,
                 const CompactChunk& chunk) {
  // The last panel's pixels past the end that its last 16-pixel step reads: x = 0.
  const uint32_t tail = chunk.pixels % kPanel, tail_end = static_cast<uint32_t>(round16(tail));
  const uint32_t quad_chunk = ceil_div(geo.quads_per_tap, ceil_div(4 * run.pool.size(), chunk.count));
  const uint32_t quad_chunks = ceil_div(geo.quads_per_tap, quad_chunk);
  const auto build = [&](size_t t) {
    const auto n = static_cast<uint32_t>(t / quad_chunks);
    const uint32_t c_begin = static_cast<uint32_t>(t % quad_chunks) * quad_chunk;
    const uint32_t c_end = std::min(geo.quads_per_tap, c_begin + quad_chunk);
    thread_local std::vector<uint8_t> image_source;
    if (image_source.size() < layer.src.bytes) image_source.resize(layer.src.bytes);
    build_implicit_source(s, geo, layer.src, conv_input(run, s, chunk.n0 + n, 0), 0, s.conv_h, c_begin, c_end,
                          image_source.data());
    for (uint32_t tap = 0; tap < layer.taps; ++tap) {
      for (uint32_t c = c_begin; c < c_end; ++c) {
        uint8_t* quad = chunk.source + (static_cast<size_t>(tap) * geo.quads_per_tap + c) * 4 * kPanel;
        gather_pixels_to_panels_avx512(image_source.data() + c * layer.src.quad_stride + layer.image_tap_offset[tap],
                                       geo.width, s.conv_w, s.conv_h, static_cast<uint32_t>(n * s.conv_plane),
                                       layer.panel_stride, quad);
        if (n + 1 == chunk.count && tail != 0) {
          std::memset(quad + (chunk.panels - 1) * layer.panel_stride + 4 * tail, 0x80, 4 * (tail_end - tail));
        }
      }
    }
  };
  return run.pool.parallel_for(static_cast<size_t>(chunk.count) * quad_chunks, build, run.deadline);
}

// GEMM tasks: groups of whole panels under kGroupBudget and at least 2 per thread where there are
// panels enough, of about equal size; output channels in chunks of whole micro-kernel blocks;
// about 8 tasks per thread (with 4, 9 tasks of 3 groups x 3 chunks left a thread idle a tenth of
// a layer).
bool gemm_chunk(const LayerRun& run, const ConvShape& s, const CompactLayer& layer, const CompactChunk& chunk) {
  const uint32_t threads = run.pool.size();
  const auto budget_panels = static_cast<uint32_t>(kGroupBudget / layer.panel_stride);
  const uint32_t most_panels = std::clamp(budget_panels, 1u, std::max(1u, ceil_div(chunk.panels, 2 * threads)));
  const uint32_t group_panels = ceil_div(chunk.panels, ceil_div(chunk.panels, most_panels));
  const uint32_t groups = ceil_div(chunk.panels, group_panels);
  const uint32_t parts = std::min(ceil_div(8 * threads, groups), ceil_div(s.out_per_group, kVnniRows));
  const uint32_t oc_chunk = ceil_div(ceil_div(s.out_per_group, parts), kVnniRows) * kVnniRows;
  const uint32_t oc_chunks = ceil_div(s.out_per_group, oc_chunk);
  const auto gemm = [&](size_t t) {
    const auto c = static_cast<uint32_t>(t % oc_chunks), group = static_cast<uint32_t>(t / oc_chunks);
    const uint32_t oc_begin = c * oc_chunk, oc_end = std::min(s.out_per_group, oc_begin + oc_chunk);
    ImplicitArgs args = layer.args;
    args.source = chunk.source;
    args.width = args.valid_w = chunk.pixels;
    args.packed = layer.args.packed + packed_quad_words(oc_begin, 4 * layer.quads);
    args.m = oc_end - oc_begin;
    args.q = conv_requant(run, oc_begin);
    args.out = conv_output(run, s, chunk.n0, oc_begin);
    args.first_pixel = group * group_panels * kPanel;
    args.pixels = std::min(chunk.pixels, (group + 1) * group_panels * kPanel);
    run.kernels.implicit_gemm(args);
  };
  return run.pool.parallel_for(static_cast<size_t>(groups) * oc_chunks, gemm, run.deadline);
}

}  // namespace

bool run_compact_path(const LayerRun& run, const ConvShape& s, const ImplicitGeometry& geo) {
  CompactLayer layer{};
  layer.src = implicit_source(geo, s.conv_h);
  layer.taps = s.kernel_h * s.kernel_w;
  layer.quads = layer.taps * geo.quads_per_tap;
  layer.panel_stride = static_cast<size_t>(layer.quads) * 4 * kPanel;
  for (uint32_t tap = 0; tap < layer.taps; ++tap) {
    layer.tap_offset[tap] = static_cast<int32_t>(static_cast<size_t>(tap) * geo.quads_per_tap * 4 * kPanel);
  }
  layer.args = implicit_args(run, s, geo, layer.src, ImplicitBlock{0, 0, 0, s.conv_h, 0, s.out_per_group}, nullptr,
                             layer.image_tap_offset);
  layer.args.tap_offset = layer.tap_offset;
  layer.args.quad_stride = 4 * kPanel;
  layer.args.panel_stride = layer.panel_stride;
  layer.args.images = 1;
  layer.args.image_source_stride = 0;
  layer.args.image_out_stride = s.fused_pool ? static_cast<size_t>(run.d.out_c) * s.conv_plane : run.image_bytes;
  layer.args.compact_plane = static_cast<uint32_t>(s.conv_plane);
  // Chunks of about equal size (5 images under a budget of 4 are 3 + 2, not 4 + 1).
  const size_t image_bytes = 4 * static_cast<size_t>(layer.quads) * s.conv_plane;
  const auto most = static_cast<uint32_t>(std::clamp<size_t>(kCompactBudget / image_bytes, 1, run.batch));
  const uint32_t images = ceil_div(run.batch, ceil_div(run.batch, most));
  // The caller's buffer: the tasks, on the pool's threads too, get its address.
  thread_local std::vector<uint8_t> buffer;
  for (uint32_t n0 = 0; n0 < run.batch; n0 += images) {
    CompactChunk chunk{};
    chunk.n0 = n0;
    chunk.count = std::min(images, run.batch - n0);
    chunk.pixels = static_cast<uint32_t>(chunk.count * s.conv_plane);
    chunk.panels = ceil_div(chunk.pixels, kPanel);
    if (buffer.size() < chunk.panels * layer.panel_stride) buffer.resize(chunk.panels * layer.panel_stride);
    chunk.source = buffer.data();
    if (!build_chunk(run, s, geo, layer, chunk) || !gemm_chunk(run, s, layer, chunk)) return false;
  }
  return true;
}

}  // namespace tessera::emu
