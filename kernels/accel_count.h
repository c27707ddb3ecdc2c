// accel_count.h — cycle and AXI accounting for the C simulation (issue 14 point 1). Compiled in
// only with -DTESSERA_KERNEL_COUNT (CMake target tessera_kernel_csim_count); otherwise every macro
// below is empty and the kernel text HLS synthesises is the same as without this file.
//
// What is counted, per fabric layer (the layer loop in tessera_accel.cpp selects the slot):
//  - AXI traffic per m_axi port: accesses (one per 512-bit beat, counted with the bytes the beat
//    carries for the kernel), bytes, and bursts. A burst is a run of consecutive addresses in one
//    direction on one port, cut every `burst_bytes` bytes (the board's DDR burst, as the cost
//    model's `bursts` counts them: ceil(run bytes / burst) per contiguous run). This assumes HLS
//    widens the port so one AXI transaction carries a whole DDR burst.
//  - Cycles of every pipelined loop: iterations x the II its pragma declares, plus the pipeline
//    depth of one loop entry (abi::schedule in kernel_abi.h lists the depths assumed). Loops of
//    the load half (load_conv_tile), the compute half (compute_conv_tile) and the store half
//    (store_conv_tile) are summed apart: in hardware the three run concurrently on opposite
//    ping-pong buffers. Where two loops of one half run side by side (the weight staging beside
//    the pixel loop), the kernel counts the longer of the two (TESSERA_COUNT_CYCLES).
#pragma once

#include <cstdint>

#ifdef TESSERA_KERNEL_COUNT

namespace tessera {
namespace kernel {

enum CountPort : uint32_t { kPortProgram = 0, kPortWeights, kPortQuant, kPortArena, kPortStatus, kPortCount };
// kHalfWrite: a conv's output writes, concurrent with the next tile's requantisation (ping-pong
// staging tiles); pools and adds count their writes in kHalfStore.
enum CountHalf : uint32_t { kHalfLoad = 0, kHalfCompute, kHalfStore, kHalfWrite, kHalfOther, kHalfCount };

struct PortCounter {
  uint64_t beats_read = 0, beats_written = 0;
  uint64_t bytes_read = 0, bytes_written = 0;
  uint64_t bursts_read = 0, bursts_written = 0;
  // Open burst per direction: next expected byte address and bytes in it so far.
  uint64_t next_addr[2] = {~0ull, ~0ull};
  uint64_t open_bytes[2] = {0, 0};
};

struct LayerCounter {
  PortCounter ports[kPortCount];
  uint64_t loop_cycles[kHalfCount] = {};
  uint64_t loop_entries[kHalfCount] = {};
  uint64_t steps = 0;  // conv steps (output tile x channel slice)
};

// The counters of one kernel launch; the test sets burst_bytes and layer_capacity, then reads
// layers[0 .. layer_capacity) after the launch.
struct KernelCounters {
  uint32_t burst_bytes = 128;
  uint32_t layer_capacity = 0;
  LayerCounter* layers = nullptr;  // owned by the caller
  uint32_t current = 0;
};

KernelCounters& kernel_counters();  // defined in tessera_accel.cpp

inline LayerCounter* counted_layer() {
  KernelCounters& k = kernel_counters();
  return k.layers != nullptr && k.current < k.layer_capacity ? &k.layers[k.current] : nullptr;
}

inline void count_access(uint32_t port, bool write, const void* addr, uint32_t bytes) {
  LayerCounter* l = counted_layer();
  if (l == nullptr) return;
  PortCounter& p = l->ports[port];
  const uint32_t dir = write ? 1 : 0;
  const uint64_t a = reinterpret_cast<uintptr_t>(addr);
  (write ? p.beats_written : p.beats_read) += 1;
  (write ? p.bytes_written : p.bytes_read) += bytes;
  if (a != p.next_addr[dir] || p.open_bytes[dir] + bytes > kernel_counters().burst_bytes) {
    (write ? p.bursts_written : p.bursts_read) += 1;
    p.open_bytes[dir] = 0;
  }
  p.open_bytes[dir] += bytes;
  p.next_addr[dir] = a + bytes;
}

inline void count_loop(uint32_t half, uint64_t iterations, uint32_t ii, uint32_t depth) {
  LayerCounter* l = counted_layer();
  if (l == nullptr) return;
  l->loop_cycles[half] += iterations * ii + depth;
  l->loop_entries[half] += 1;
}

// Cycles of a region whose length the kernel computes (e.g. the longer of two concurrent loops).
inline void count_cycles(uint32_t half, uint64_t cycles) {
  LayerCounter* l = counted_layer();
  if (l == nullptr) return;
  l->loop_cycles[half] += cycles;
}

}  // namespace kernel
}  // namespace tessera

#define TESSERA_COUNT_READ(port, ptr) ::tessera::kernel::count_access(port, false, (ptr), sizeof(*(ptr)))
// One beat of `bytes` consecutive bytes from `ptr` (a wide port).
#define TESSERA_COUNT_READ_BEAT(port, ptr, bytes) ::tessera::kernel::count_access(port, false, (ptr), (bytes))
#define TESSERA_COUNT_WRITE_BEAT(port, ptr, bytes) ::tessera::kernel::count_access(port, true, (ptr), (bytes))
#define TESSERA_COUNT_CYCLES(half, cycles) ::tessera::kernel::count_cycles(half, cycles)
#define TESSERA_COUNT_WRITE(port, ptr) ::tessera::kernel::count_access(port, true, (ptr), sizeof(*(ptr)))
#define TESSERA_COUNT_LOOP(half, iterations, ii, depth) ::tessera::kernel::count_loop(half, iterations, ii, depth)
#define TESSERA_COUNT_LAYER(index) (::tessera::kernel::kernel_counters().current = (index))
#define TESSERA_COUNT_STEP()                                                                   \
  do {                                                                                         \
    if (::tessera::kernel::LayerCounter* l_ = ::tessera::kernel::counted_layer()) ++l_->steps; \
  } while (0)

#else

#define TESSERA_COUNT_READ(port, ptr) ((void)0)
#define TESSERA_COUNT_READ_BEAT(port, ptr, bytes) ((void)0)
#define TESSERA_COUNT_WRITE_BEAT(port, ptr, bytes) ((void)0)
#define TESSERA_COUNT_CYCLES(half, cycles) ((void)0)
#define TESSERA_COUNT_WRITE(port, ptr) ((void)0)
#define TESSERA_COUNT_LOOP(half, iterations, ii, depth) ((void)0)
#define TESSERA_COUNT_LAYER(index) ((void)0)
#define TESSERA_COUNT_STEP() ((void)0)

#endif
