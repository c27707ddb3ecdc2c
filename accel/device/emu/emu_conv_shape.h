// ConvShape: a kOpConv descriptor's geometry in the form the conv paths use, plus where one
// image's input channels, output planes and parameters live.
#pragma once

#include <cstddef>
#include <cstdint>

#include "accel/device/emu/emu_ops.h"
#include "kernels/kernel_abi.h"

namespace tessera::emu {

struct ConvShape {
  uint32_t in_h, in_w, conv_h, conv_w;
  uint32_t kernel_h, kernel_w, stride_h, stride_w, dilation_h, dilation_w;
  int32_t pad_top, pad_left;
  uint32_t groups, in_per_group, out_per_group;
  uint32_t k;         // reduction length per output: in_per_group * kernel_h * kernel_w
  size_t in_plane;    // in_h * in_w
  size_t conv_plane;  // conv_h * conv_w
  // Output columns [ox_begin[kx], ox_end[kx]) read an in-range input column for kernel column kx.
  uint32_t ox_begin[abi::kMaxKernel], ox_end[abi::kMaxKernel];
  bool fused_pool;
};

ConvShape make_conv_shape(const abi::LayerDesc& d);

// ceil(a / b), the conv paths' task splits.
inline uint32_t ceil_div(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

// Input channel 0 of group g of image n.
inline const int8_t* conv_input(const LayerRun& run, const ConvShape& s, uint32_t n, uint32_t g) {
  return run.arena + n * run.image_bytes + run.d.in_offset +
         (run.d.in_channel_base + static_cast<size_t>(g) * s.in_per_group) * s.in_plane;
}

// Plane of output channel oc (before the fused pool: in the scratch) of image n.
inline int8_t* conv_output(const LayerRun& run, const ConvShape& s, uint32_t n, uint32_t oc) {
  if (s.fused_pool) return run.scratch + (static_cast<size_t>(n) * run.d.out_c + oc) * s.conv_plane;
  return run.arena + n * run.image_bytes + run.d.out_offset +
         (run.d.out_channel_base + static_cast<size_t>(oc)) * s.conv_plane;
}

inline RequantParams conv_requant(const LayerRun& run, uint32_t oc) {
  const int32_t* q = run.quant + run.d.quant_offset;
  return {q + oc, q + run.d.out_c + oc, q + 2 * run.d.out_c + oc, run.d.act_lo, run.d.act_hi};
}

// out[j] = src[2 * j] for j < n (reads src[0 .. 2n - 1)): stride-2 gathers of both conv paths.
void copy_stride2(int8_t* out, const int8_t* src, uint32_t n);

// The implicit GEMM's layout for a conv (emu_conv_implicit.cc): the stride phases its taps
// read, their rows' width (conv_w plus the largest column offset of a tap), the rows past a
// task's output rows that its taps read, and quads of input channels per tap.
struct ImplicitGeometry {
  bool phase_used[abi::kMaxStride * abi::kMaxStride];
  uint32_t phase_slot[abi::kMaxStride * abi::kMaxStride];  // index among the used phases
  uint32_t phases, width, extra_rows, extra_cols, quads_per_tap;
};
ImplicitGeometry implicit_geometry(const ConvShape& s);

// One implicit-GEMM task: output rows [row_begin, row_end) of output channels [oc_begin, oc_end)
// of group g, image n.
struct ImplicitBlock {
  uint32_t n, g, row_begin, row_end, oc_begin, oc_end;
};

// The quad source of one image's block of out_rows output rows: bytes per plane, per quad of
// channels (its phases' planes) and in all.
struct ImplicitSource {
  size_t plane_bytes, quad_stride, bytes;
};
ImplicitSource implicit_source(const ImplicitGeometry& geo, uint32_t out_rows);

// Quads [c_begin, c_end) of the quad source (src's layout) for output rows [row_begin, row_begin
// + out_rows) of group input `in` (its channel 0), at source (which holds all quads).
void build_implicit_source(const ConvShape& s, const ImplicitGeometry& geo, const ImplicitSource& src, const int8_t* in,
                           uint32_t row_begin, uint32_t out_rows, uint32_t c_begin, uint32_t c_end, uint8_t* source);

// The implicit GEMM's arguments for block `at` over `source` (one image, src's layout); fills
// tap_offset (kernel_h * kernel_w entries), which the arguments point to.
ImplicitArgs implicit_args(const LayerRun& run, const ConvShape& s, const ImplicitGeometry& geo,
                           const ImplicitSource& src, const ImplicitBlock& at, const uint8_t* source,
                           int32_t* tap_offset);

// Block `at` by the kernels' implicit_gemm (conv_uses_implicit), its source built by the task.
void conv_implicit_block(const LayerRun& run, const ConvShape& s, const ImplicitGeometry& geo, const ImplicitBlock& at);

// True when an implicit-GEMM conv runs its images in groups (small maps, few images per thread;
// emu_conv_grouped.cc), and that run; false when the run's deadline stopped it.
bool conv_uses_grouped(const ConvShape& s, const ImplicitGeometry& geo, uint32_t batch, uint32_t threads);
bool run_grouped_path(const LayerRun& run, const ConvShape& s, const ImplicitGeometry& geo);

// True when an implicit-GEMM conv runs with its images' output pixels end to end (small maps,
// where rows with their padding columns waste a tenth of the lanes or more; emu_conv_compact.cc),
// and that run; false when the run's deadline stopped it.
bool conv_uses_compact(const ConvShape& s, const ImplicitGeometry& geo, uint32_t batch);
bool run_compact_path(const LayerRun& run, const ConvShape& s, const ImplicitGeometry& geo);

// Output rows [row_begin, row_end) of output channels [oc_begin, oc_end) of group g, image n.
void conv_gemm_block(const LayerRun& run, const ConvShape& s, uint32_t n, uint32_t g, uint32_t row_begin,
                     uint32_t row_end, uint32_t oc_begin, uint32_t oc_end);
// Output rows [row_begin, row_end) of output channels [oc_begin, oc_end) (any groups) of image n.
void conv_direct_channels(const LayerRun& run, const ConvShape& s, uint32_t n, uint32_t oc_begin, uint32_t oc_end,
                          uint32_t row_begin, uint32_t row_end);

}  // namespace tessera::emu
