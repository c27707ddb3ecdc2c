// The emulator's layer operations: each executes one abi::LayerDesc for a whole batch, over
// the device's thread pool. Descriptors reaching them have passed check_layer()
// (emu_program_check.h), so they index only inside the arena and parameter buffers.
#pragma once

#include <cstddef>
#include <cstdint>

#include "accel/device/emu/emu_kernels.h"
#include "accel/device/emu/emu_thread_pool.h"
#include "kernels/kernel_abi.h"

namespace tessera::emu {

// One layer's execution context.
struct LayerRun {
  const abi::LayerDesc& d;
  const int8_t* weights;  // the program's weights buffer
  const int32_t* quant;   // the program's quant buffer
  int8_t* arena;          // image n at arena + n * image_bytes
  size_t image_bytes;
  uint32_t batch;
  const EmuKernels& kernels;
  EmuThreadPool& pool;
  const int32_t* packed;             // conv: pack_conv_weights() output when kernels.pack is set, else null
  int8_t* scratch;                   // conv with fused pool: batch * conv_scratch_bytes(kernels, d) bytes
  EmuThreadPool::Deadline deadline;  // the run's: no task of the layer starts after it
};

// Bytes per image a conv layer needs for its pre-pool output on these kernels (0 without a fused
// pool, and on the stem path, whose tasks pool from their own thread's scratch).
size_t conv_scratch_bytes(const EmuKernels& kernels, const abi::LayerDesc& d);
// True when a conv layer runs on the GEMM path (enough output channels per group to pay for
// im2col); false: the direct path (depthwise and other thin groups).
bool conv_uses_gemm(const abi::LayerDesc& d);
// True when a GEMM-path conv runs as an implicit GEMM (kernels.implicit_gemm, no im2col): the
// kernels have one and the group's input channels fill quads well enough.
bool conv_uses_implicit(const EmuKernels& kernels, const abi::LayerDesc& d);
// All groups' weights in the kernels' pack() layout (pack_tap_quads' for an implicit GEMM),
// group after group (empty for the direct path, or kernels without a packed layout).
void pack_conv_weights(const EmuKernels& kernels, const abi::LayerDesc& d, const int8_t* weights, int32_t* packed);
size_t packed_conv_words(const EmuKernels& kernels, const abi::LayerDesc& d);

// Each returns false when the run's deadline passed before all of the layer's tasks had started;
// the layer's output is then incomplete and the run is to be abandoned.
bool run_conv(const LayerRun& run);
bool run_pool(const LayerRun& run);
bool run_add(const LayerRun& run);

// Pool geometry in the pool's input coordinates.
struct PoolWindow {
  uint32_t h, w, stride_h, stride_w, pad_top, pad_left;
};
// Max over each window's in-range positions of one channel plane (src in_h x in_w, dst
// out_h x out_w); shared by the fused pool of kOpConv and kOpPool max.
void max_pool_plane(const EmuKernels& kernels, const int8_t* src, uint32_t in_h, uint32_t in_w, const PoolWindow& win,
                    int8_t* dst, uint32_t out_h, uint32_t out_w);

// Splits [0, count) into about `parts` contiguous chunks; chunk i is [begin, end).
struct Chunks {
  size_t count, size;
  size_t num() const { return size == 0 ? 0 : (count + size - 1) / size; }
  size_t begin(size_t i) const { return i * size; }
  size_t end(size_t i) const { return (i + 1) * size < count ? (i + 1) * size : count; }
};
inline Chunks make_chunks(size_t count, size_t parts) {
  if (parts == 0) parts = 1;
  return {count, count == 0 ? 0 : (count + parts - 1) / parts};
}

}  // namespace tessera::emu
