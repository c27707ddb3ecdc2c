// accel_common.h — small helpers shared by the accelerator's layer engines (accel_conv.h,
// accel_pool.h, accel_add.h). Synthesisable C++: fixed-width integers, no allocation, no std::.
// Only tessera_accel.cpp includes it; Vitis HLS and g++ (C simulation) compile the same text.
#pragma once

#include <cstdint>

#include "kernels/accel_count.h"
#include "kernels/kernel_abi.h"

// The MAC array synthesised: TESSERA_MAC_LANES output channels x TESSERA_MAC_CHANNELS input
// channels per clock. The datapath is written for the ceiling (kMaxTileM x kMaxVector = 64 x 64);
// a smaller array folds it over kConvII cycles per pixel. kernels/Makefile takes the array, like
// every other value of the hardware spec, from the board profile (accel/plan/boards/<board>.toml:
// 64 x 32 on ZCU102, ZCU104 and per F1 instance). C simulation is bit-identical for every setting.
#ifndef TESSERA_MAC_LANES
#define TESSERA_MAC_LANES 64
#endif
#ifndef TESSERA_MAC_CHANNELS
#define TESSERA_MAC_CHANNELS 64
#endif

// Where the 256 KB output accumulator tile lives: UltraRAM (1; XCZU7EV/ZCU104, VU9P/F1) or
// block RAM (0; the ZCU102's XCZU9EG has no UltraRAM).
#ifndef TESSERA_OUT_URAM
#define TESSERA_OUT_URAM 1
#endif

namespace tessera {
namespace kernel {

using abi::acc_t;
using abi::act_t;
using abi::weight_t;

constexpr uint32_t kMacLanes = TESSERA_MAC_LANES;
constexpr uint32_t kMacChannels = TESSERA_MAC_CHANNELS;
static_assert(kMacLanes >= 1 && abi::kMaxTileM % kMacLanes == 0, "MAC lanes must divide kMaxTileM");
static_assert(kMacChannels >= 1 && abi::kMaxVector % kMacChannels == 0, "MAC channels must divide kMaxVector");
// Initiation interval of the conv pixel loop: one (pixel, chunk of kMacChannels channels) per
// kConvII cycles, the kMaxTileM lanes folded onto kMacLanes.
constexpr uint32_t kConvII = abi::schedule::conv_pixel_ii(kMacLanes);
constexpr uint32_t kMacCount = kMacLanes * kMacChannels;
// Multipliers (DSP slices) of the array: with TESSERA_INT8_PACK (accel_pack.h, DSP48E2 parts) two
// MACs share one 27 x 18 product, so kMacCount / 2.
#ifndef TESSERA_INT8_PACK
#define TESSERA_INT8_PACK 1
#endif
constexpr uint32_t kMacMultipliers = TESSERA_INT8_PACK ? kMacCount / 2 : kMacCount;
static_assert(!TESSERA_INT8_PACK || kMacCount % 2 == 0, "packed MACs come in pairs");

// Banked on-chip buffers (kernel_abi.h kBanks, one byte per bank and cycle): the input tile
// (channel-major, skewed), the weight tile (lane-major, DDR order) and the output staging tile of
// the store half (lane-major, skewed). Rows per bank:
constexpr uint32_t kBanks = abi::kBanks;
constexpr uint32_t kInBankRows = abi::kInputBufferBytes / kBanks;
constexpr uint32_t kWBankRows = abi::kWeightBufferBytes / kBanks;
// int8 results of one output tile: tile_m x pixels <= kOutputBufferBytes / 4, each lane padded to
// whole bank rows (at most kMaxTileM more rows).
constexpr uint32_t kStageBankRows = abi::kOutputBufferBytes / 4 / kBanks + abi::kMaxTileM;

// Static sizes of the on-chip buffers, in elements (kernel_abi.h gives them in bytes).
constexpr uint32_t kInputBufferElems = abi::kInputBufferBytes / sizeof(act_t);
constexpr uint32_t kWeightBufferElems = abi::kWeightBufferBytes / sizeof(weight_t);
constexpr uint32_t kOutputBufferElems = abi::kOutputBufferBytes / sizeof(acc_t);

// Lowest int8: the identity of max. A max window with no valid position keeps it, and the clamp
// to [act_lo, act_hi] that follows turns it into act_lo.
constexpr int32_t kInt8Min = -128;

// int32 addition with two's complement wrap-around (what the hardware adder does): the conv
// accumulator and its bias add are defined modulo 2^32, so every summation order agrees.
inline int32_t wrap_add(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}

inline int32_t clamp_i32(int32_t v, int32_t lo, int32_t hi) { return v < lo ? lo : (v > hi ? hi : v); }

inline int32_t max_i32(int32_t a, int32_t b) { return a > b ? a : b; }

inline uint32_t min_u32(uint32_t a, uint32_t b) { return a < b ? a : b; }

inline uint32_t ceil_div(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

// True when 0 <= v < bound (v may be negative: a padded position).
inline bool in_range(int32_t v, uint32_t bound) { return v >= 0 && static_cast<uint32_t>(v) < bound; }

}  // namespace kernel
}  // namespace tessera
