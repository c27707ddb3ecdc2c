// kOpAdd: y = requantize_add(a, b, M_a, M_b, S, act_lo, act_hi) element by element; a, b and y
// are out_c x out_h x out_w channel slices of their tensors (the kernel sizes all three by the
// output). Each element is read before it is written, so an in-place add is fine.
#include "accel/device/emu/emu_ops.h"

namespace tessera::emu {

bool run_add(const LayerRun& run) {
  const abi::LayerDesc& d = run.d;
  const size_t plane = static_cast<size_t>(d.out_h) * d.out_w;
  const int32_t* q = run.quant + d.quant_offset;
  const int32_t multiplier_a = q[0], multiplier_b = q[1], shift = q[2];
  const auto add_channel = [&](size_t t) {
    const uint32_t n = static_cast<uint32_t>(t / d.out_c), c = static_cast<uint32_t>(t % d.out_c);
    const int8_t* image = run.arena + n * run.image_bytes;
    const int8_t* a = image + d.in_offset + (d.in_channel_base + c) * plane;
    const int8_t* b = image + d.in2_offset + (d.in2_channel_base + c) * plane;
    int8_t* y = run.arena + n * run.image_bytes + d.out_offset + (d.out_channel_base + c) * plane;
    run.kernels.add_row(a, b, static_cast<uint32_t>(plane), multiplier_a, multiplier_b, shift, d.act_lo, d.act_hi, y);
  };
  return run.pool.parallel_for(static_cast<size_t>(run.batch) * d.out_c, add_channel, run.deadline);
}

}  // namespace tessera::emu
