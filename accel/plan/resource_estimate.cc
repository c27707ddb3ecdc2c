#include "accel/plan/resource_estimate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "accel/plan/model_plan.h"
#include "kernels/kernel_abi.h"

namespace tessera::plan {
namespace {

// Block RAM primitives: a BRAM18 holds 2K x 9 bits (2 KiB of int8) or 512 x 36 bits (512
// int32); a BRAM36 is two of them; a URAM holds 4K x 72 bits (4K words of two int32 lanes;
// a partitioned bank cannot share its URAM with another bank's port).
constexpr double kBram18Bytes = 2048, kBram18Words = 512, kUramWords = 4096;
// One requantiser: the 32 x 32-bit product of requantize() on 27x18 (DSP48E2) / 25x18 (DSP48E1)
// multipliers takes 4 slices.
constexpr double kDspPerRequantiser = 4;
// The add's requantize_add units (accel_add.h; the profile's add_lanes), two int8 x int32 products
// each, 2 DSP48 per product; the average pool uses the conv store half's requantisers (one shared
// instance).
constexpr double kDspPerAddLane = 2 * 2;
// ~2 BRAM36 of burst FIFOs per m_axi port (5). Pools and adds use the conv engine's buffers (an
// add's operand chunks in an input tile, its result in a staging tile); the store half's pool
// line buffers (kMaxPoolKernel lines x 64 lanes x kMaxTileC int8, 192 arrays of 256 bytes: ~6 K
// LUTs) are LUTRAM.
constexpr double kBramOther = 2 * 5;

// BRAM36 blocks of an int8 buffer of `bytes` cyclically partitioned into `banks`.
double bram36_bytes(double bytes, uint32_t banks) { return banks * std::ceil(bytes / banks / kBram18Bytes) / 2; }

}  // namespace

double ResourceEstimate::share(double used, double avail) {
  if (used <= 0) return 0;
  return avail > 0 ? used / avail : INFINITY;
}

double ResourceEstimate::max_use() const { return std::max({dsp_use(), bram36_use(), uram_use()}); }

ResourceEstimate estimate_resources(const BoardProfile& b) {
  ResourceEstimate e;
  // The kernel instances the xclbin holds (the kernel space's), not the explore space's CUs.
  const double cus = std::max(1u, b.kernel_instances);
  const double macs_per_dsp = std::max(1u, b.int8_macs_per_dsp);
  e.dsp_macs = cus * std::ceil(static_cast<double>(b.macs_per_cycle()) / macs_per_dsp);
  e.dsp_requant = cus * b.mac_lanes * kDspPerRequantiser;
  e.dsp_other = cus * b.add_lanes * kDspPerAddLane;
  // kernels/accel_conv.h conv_layer: the input and weight ping-pong pairs in abi::kBanks byte
  // banks each, the two int32 accumulator tiles (compute and store halves) cyclic by mac_lanes, in
  // URAM where the part has it (TESSERA_OUT_URAM), and the store half's int8 staging tile.
  e.bram_input = cus * 2 * bram36_bytes(abi::kInputBufferBytes, abi::kBanks);
  e.bram_weight = cus * 2 * bram36_bytes(abi::kWeightBufferBytes, abi::kBanks);
  const double bank_words = static_cast<double>(abi::kOutputBufferBytes) / 4 / b.mac_lanes;
  if (b.output_in_uram) {
    // Two lanes' int32 share a 72-bit URAM word (array_reshape by 2): a pixel's lanes are read
    // and written together.
    e.uram_output = cus * 2 * std::ceil(b.mac_lanes / 2.0) * std::ceil(bank_words / kUramWords);
  } else {
    e.bram_output = cus * 2 * b.mac_lanes * std::ceil(bank_words / kBram18Words) / 2;
  }
  // Two staging tiles: the store half requantises into one while the write half drains the other.
  e.bram_stage =
      cus * 2 *
      bram36_bytes(static_cast<double>(abi::kOutputBufferBytes) / 4 + abi::kMaxTileM * abi::kBanks, abi::kBanks);
  e.bram_other = cus * kBramOther;
  const double keep = 1 - b.shell_share;
  e.dsp_avail = b.part_dsp * keep;
  e.bram36_avail = b.part_bram36 * keep;
  e.uram_avail = b.part_uram * keep;
  return e;
}

std::string resource_summary(const ResourceEstimate& e) {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "DSP %.0f of %.0f (%.0f%%: %.0f MAC + %.0f requant + %.0f other), BRAM36 %.0f of %.0f (%.0f%%), URAM "
                "%.0f of %.0f (%.0f%%)",
                e.dsp(), e.dsp_avail, 100 * e.dsp_use(), e.dsp_macs, e.dsp_requant, e.dsp_other, e.bram36(),
                e.bram36_avail, 100 * e.bram36_use(), e.uram(), e.uram_avail, 100 * e.uram_use());
  return buf;
}

}  // namespace tessera::plan
