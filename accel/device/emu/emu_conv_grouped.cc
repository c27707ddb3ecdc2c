// The implicit GEMM on small maps (7x7, 14x14: ResNet's and GoogLeNet's late layers) by groups of
// images, as oneDNN blocks over the minibatch. Per image (emu_conv.cc's run_implicit_path) a task
// held one image's whole map, so each image streamed all of the layer's weights (ResNet-18's
// 512 x 4608 are 2.4 MB, past L2), and at batch 1 each channel chunk built the image's source
// again. Here each image's quad source is built once per layer, in the per-image layout
// (emu_conv_implicit.cc), by tasks of its own; then each GEMM task takes a chunk of output
// channels over a group of images, a block of weights staying in L1 over all their panels.
#include <algorithm>
#include <vector>

#include "accel/device/emu/emu_conv_shape.h"

namespace tessera::emu {
namespace {

// Quad-source bytes a group of images aims at at most (its tasks read it from L2).
constexpr size_t kGroupSourceBudget = 768 * 1024;
// Virtual pixels of an image (rows of the per-image layout) up to which its images are grouped.
constexpr uint32_t kGroupedPixels = 256;

}  // namespace

bool conv_uses_grouped(const ConvShape& s, const ImplicitGeometry& geo, uint32_t batch, uint32_t threads) {
  // Only where the per-image path would split each image's channels into chunks (fewer than 4
  // images x groups per thread), each rebuilding the image's source: ResNet-18 at batch 1, 14->7
  // 3x3/2 0.641 -> 0.177 ms CPU. With enough images the per-image tasks were as fast, within the
  // noise of a loaded machine (batch 8 on 2 threads, 7x7 and 14x14 3x3/1; layerbench,
  // interleaved), so batch 8 keeps them.
  return static_cast<size_t>(s.conv_h) * geo.width <= kGroupedPixels && batch * s.groups < 4 * threads;
}

bool run_grouped_path(const LayerRun& run, const ConvShape& s, const ImplicitGeometry& geo) {
  const ImplicitSource src = implicit_source(geo, s.conv_h);
  const uint32_t units = run.batch * s.groups;  // image n's group g is unit n * groups + g
  // The caller's buffer: the tasks, on the pool's threads too, get its address (not their own
  // thread_local).
  thread_local std::vector<uint8_t> buffer;
  if (buffer.size() < units * src.bytes) buffer.resize(units * src.bytes);
  uint8_t* const sources = buffer.data();
  const uint32_t threads = run.pool.size();
  // Source tasks: quads in chunks, about 4 tasks per thread.
  const uint32_t quad_chunk = ceil_div(geo.quads_per_tap, ceil_div(4 * threads, units));
  const uint32_t quad_chunks = ceil_div(geo.quads_per_tap, quad_chunk);
  const auto build = [&](size_t t) {
    const auto u = static_cast<uint32_t>(t / quad_chunks);
    const uint32_t c = static_cast<uint32_t>(t % quad_chunks) * quad_chunk;
    build_implicit_source(s, geo, src, conv_input(run, s, u / s.groups, u % s.groups), 0, s.conv_h, c,
                          std::min(geo.quads_per_tap, c + quad_chunk), sources + u * src.bytes);
  };
  if (!run.pool.parallel_for(static_cast<size_t>(units) * quad_chunks, build, run.deadline)) return false;
  // GEMM tasks: groups of about equal size (5 images under a budget of 4 are 3 + 2, not 4 + 1),
  // output channels in chunks of whole micro-kernel blocks, about 4 tasks per thread.
  const uint32_t most = std::clamp<uint32_t>(static_cast<uint32_t>(kGroupSourceBudget / src.bytes), 1, run.batch);
  const uint32_t images = ceil_div(run.batch, ceil_div(run.batch, most));
  const uint32_t image_groups = ceil_div(run.batch, images);
  const uint32_t tasks = image_groups * s.groups;
  const uint32_t parts = std::min(ceil_div(4 * threads, tasks), ceil_div(s.out_per_group, kVnniRows));
  const uint32_t oc_chunk = ceil_div(ceil_div(s.out_per_group, parts), kVnniRows) * kVnniRows;
  const uint32_t oc_chunks = ceil_div(s.out_per_group, oc_chunk);
  const size_t image_out_stride = s.fused_pool ? static_cast<size_t>(run.d.out_c) * s.conv_plane : run.image_bytes;
  const auto gemm = [&](size_t t) {
    const auto c = static_cast<uint32_t>(t % oc_chunks), g = static_cast<uint32_t>(t / oc_chunks % s.groups);
    const uint32_t first = static_cast<uint32_t>(t / oc_chunks / s.groups) * images;
    const ImplicitBlock at{first, g, 0, s.conv_h, c * oc_chunk, std::min(s.out_per_group, (c + 1) * oc_chunk)};
    int32_t tap_offset[abi::kMaxKernel * abi::kMaxKernel];
    ImplicitArgs args = implicit_args(run, s, geo, src, at, sources + (first * s.groups + g) * src.bytes, tap_offset);
    args.images = std::min(images, run.batch - first);
    args.image_source_stride = s.groups * src.bytes;
    args.image_out_stride = image_out_stride;
    run.kernels.implicit_gemm(args);
  };
  return run.pool.parallel_for(static_cast<size_t>(tasks) * oc_chunks, gemm, run.deadline);
}

}  // namespace tessera::emu
