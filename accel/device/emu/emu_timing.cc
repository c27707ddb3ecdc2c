#include "accel/device/emu/emu_timing.h"

#include <algorithm>
#include <cmath>

namespace tessera::emu {

LayerWork layer_work(const abi::LayerDesc& d, uint32_t batch) {
  const uint64_t in = static_cast<uint64_t>(d.in_c) * d.in_h * d.in_w;
  const uint64_t out = static_cast<uint64_t>(d.out_c) * d.out_h * d.out_w;
  LayerWork w;
  switch (d.op) {
    case abi::kOpConv: {
      const uint64_t taps = static_cast<uint64_t>(d.in_c / std::max(d.groups, 1u)) * d.kernel_h * d.kernel_w;
      const bool pooled = d.pool_kind == abi::kPoolMax;
      const uint64_t pixels =
          pooled ? static_cast<uint64_t>(d.conv_h) * d.conv_w : static_cast<uint64_t>(d.out_h) * d.out_w;
      w.macs = batch * d.out_c * pixels * taps;
      w.bytes = batch * (in + out) + d.out_c * taps;
      break;
    }
    case abi::kOpPool:
      w.macs = batch * out * d.pool_h * d.pool_w;
      w.bytes = batch * (in + out);
      break;
    default:  // kOpAdd: two inputs
      w.macs = batch * out;
      w.bytes = batch * (2 * in + out);
      break;
  }
  return w;
}

uint64_t model_cycles(const EmuTimingModel& model, std::span<const abi::LayerDesc> layers, uint32_t batch) {
  const double macs_per_cycle = std::max(1u, model.macs_per_cycle);
  const double bytes_per_cycle = model.ddr_bytes_per_cycle > 0 ? model.ddr_bytes_per_cycle : 1.0;
  uint64_t cycles = 0;
  for (const abi::LayerDesc& d : layers) {
    const LayerWork w = layer_work(d, batch);
    const double compute = std::ceil(static_cast<double>(w.macs) / macs_per_cycle);
    const double memory = std::ceil(static_cast<double>(w.bytes) / bytes_per_cycle);
    cycles += static_cast<uint64_t>(std::max(compute, memory));
  }
  return cycles;
}

}  // namespace tessera::emu
