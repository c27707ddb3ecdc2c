// The stem path of kOpConv (emu_conv_stem.cc): a conv over 3 input channels (an RGB stem, ResNet's
// and GoogLeNet's 7x7/2) on the kernels' implicit GEMM with its quads formed along the kernel
// row, not across channels, and its fused max pool run on each task's rows while they are in cache.
#pragma once

#include <cstddef>
#include <cstdint>

#include "accel/device/emu/emu_conv_shape.h"

namespace tessera::emu {

// True when the conv runs on the stem path: the kernels have a stem GEMM, one group of 3
// input channels and 4 or more filters, a kernel row whose quads of 4 columns waste less than
// channel quads (3 * ceil(kernel_w / 4) < kernel_w: 4, 7, 8, 11 wide), column stride 1, 2 or 4
// and no column dilation.
bool conv_uses_stem(const EmuKernels& kernels, const abi::LayerDesc& d);
// Int32 words of the stem path's packed weights, and the packing (the implicit GEMM's layout
// over 3 quads of 4 kernel columns per tap, a tap being a kernel row and a quad of columns).
size_t packed_stem_words(const abi::LayerDesc& d);
void pack_stem_weights(const abi::LayerDesc& d, const int8_t* weights, int32_t* packed);
// The whole layer, fused max pool included (the conv output never leaves the task's scratch);
// false when the run's deadline passed before all tasks had started.
bool run_stem_path(const LayerRun& run, const ConvShape& s);

}  // namespace tessera::emu
