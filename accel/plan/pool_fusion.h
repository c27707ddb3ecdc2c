// pool_fusion.h — a standalone max-pool folded into the convolutions that write its input.
//
// A max-pool after a channel concatenation (SqueezeNet's fire modules, GoogLeNet's inception
// blocks) cannot fuse into a conv in the partition: its input is the concat, not one conv's
// output. But a max-pool works per channel, and each concat input is a channel slice that one
// conv writes, so every such conv can run the pool in its store half (LayerDesc.pool_kind) and
// write its pooled slice straight into the pool's output; the concat buffer is then never
// written or read. The bytes are the same: the conv requantises to the concat's scale, which
// the pool's output shares (a max-pool keeps its input's scale, compiler.cc), and the fused and
// the standalone pool both take the max over the window's valid positions starting from -128
// (kernel_abi.h, kPoolMax).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kernel_abi.h"

namespace tessera::plan {

// Folds every standalone max-pool whose whole input tensor is written by plain convs (no fused
// pool yet) and read by that pool alone (not by another layer, nor the program's output at
// `output_offset`) into those convs, and drops the pool's descriptor and name. Runs before
// tiles are chosen. Returns how many pools were folded.
uint32_t fuse_pools_into_producers(std::vector<abi::LayerDesc>& layers, std::vector<std::string>& names,
                                   uint32_t output_offset);

}  // namespace tessera::plan
