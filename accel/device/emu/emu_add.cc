// kOpAdd: y = requantize_add(a, b, M_a, M_b, S, act_lo, act_hi) element by element; a, b and y
// are out_c x out_h x out_w channel slices of their tensors (the kernel sizes all three by the
// output). Each element is read before it is written, so an in-place add is fine.
#include <algorithm>

#include "accel/device/emu/emu_ops.h"

namespace tessera::emu {

bool run_add(const LayerRun& run) {
  const abi::LayerDesc& d = run.d;
  const size_t plane = static_cast<size_t>(d.out_h) * d.out_w;
  const int32_t* q = run.quant + d.quant_offset;
  const int32_t multiplier_a = q[0], multiplier_b = q[1], shift = q[2];
  // The out_c channels of each operand are one contiguous run of out_c x plane bytes: tasks take
  // ~4 per thread of it per batch, at least kMinElements each (not one per channel: 512 channels
  // of 7x7 were 512 tasks of 49 elements, the hand-offs costing more than the adds).
  constexpr size_t kMinElements = 4096;
  const size_t elements = plane * d.out_c;
  const size_t parts =
      std::max<size_t>(1, std::min<size_t>((4 * run.pool.size() + run.batch - 1) / run.batch, elements / kMinElements));
  const Chunks chunks = make_chunks(elements, parts);
  const size_t per_image = chunks.num();
  const auto add_chunk = [&](size_t t) {
    const uint32_t n = static_cast<uint32_t>(t / per_image);
    const size_t i = t % per_image, begin = chunks.begin(i);
    const int8_t* image = run.arena + n * run.image_bytes;
    const int8_t* a = image + d.in_offset + d.in_channel_base * plane + begin;
    const int8_t* b = image + d.in2_offset + d.in2_channel_base * plane + begin;
    int8_t* y = run.arena + n * run.image_bytes + d.out_offset + d.out_channel_base * plane + begin;
    run.kernels.add_row(a, b, static_cast<uint32_t>(chunks.end(i) - begin), multiplier_a, multiplier_b, shift, d.act_lo,
                        d.act_hi, y);
  };
  return run.pool.parallel_for(static_cast<size_t>(run.batch) * per_image, add_chunk, run.deadline);
}

}  // namespace tessera::emu
