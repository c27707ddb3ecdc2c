// The fabric resources the HLS kernel (kernels/) needs on a board, estimated from the profile's
// MAC array and kernel_abi.h's on-chip buffer limits, against the part's datasheet totals less
// the platform shell's share. An estimate, not a synthesis report: issue 14 asks every shipped
// profile to stay within 80% of each resource, the margin placement and routing need.
#pragma once

#include <string>

#include "accel/plan/board_profile.h"

namespace tessera::plan {

// Headroom a design needs to place and route at its clock: at most this share of a resource.
constexpr double kMaxResourceUse = 0.80;

struct ResourceEstimate {
  // DSP slices: the MAC array (int8 packing), the requantisers (one per lane, a 32x32-bit
  // product = 4 DSP slices), the add and average-pool requantisers.
  double dsp_macs = 0, dsp_requant = 0, dsp_other = 0;
  // BRAM36 (or URAM) blocks: input and weight ping-pong pairs, the int32 accumulator pair, the
  // store half's int8 staging tile, and the pool/add buffers plus the m_axi adapters' FIFOs.
  double bram_input = 0, bram_weight = 0, bram_output = 0, bram_stage = 0, bram_other = 0;
  double uram_output = 0;
  // Part totals less the shell's share.
  double dsp_avail = 0, bram36_avail = 0, uram_avail = 0;

  double dsp() const { return dsp_macs + dsp_requant + dsp_other; }
  double bram36() const { return bram_input + bram_weight + bram_output + bram_stage + bram_other; }
  double uram() const { return uram_output; }
  double dsp_use() const { return share(dsp(), dsp_avail); }
  double bram36_use() const { return share(bram36(), bram36_avail); }
  double uram_use() const { return share(uram(), uram_avail); }
  double max_use() const;
  bool fits() const { return max_use() <= kMaxResourceUse; }

 private:
  static double share(double used, double avail);
};

ResourceEstimate estimate_resources(const BoardProfile& b);

// "DSP 1292 of 2520 (51%: 1024 MAC + 256 requant + 12 other), BRAM36 144 of 912 (16%), URAM 0 of 0".
std::string resource_summary(const ResourceEstimate& e);

}  // namespace tessera::plan
