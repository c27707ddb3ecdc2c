// tessera_accel.cpp — the Tessera FPGA accelerator, top level. One launch runs a whole program
// (kernels/kernel_abi.h: header + layer descriptors) over header.batch images: convolutions (with
// fused bias/requantise/ReLU/max-pool), standalone pools and element-wise adds on the fabric,
// fully-connected layers left to the ARM host (NEURAghe's split, seeds/003_10d9fa370577118e.txt).
//
// The same text is
//   - the HLS kernel: v++ -c -k tessera_accel (kernels/Makefile), five m_axi ports + AXI-Lite;
//   - the C simulation: g++ builds it into tessera_kernel_csim, which the unit tests run against a
//     naive reference and the emulator (accel/device/emu) must match bit for bit.
// Synthesisable style throughout: static array bounds from kernel_abi.h, no recursion, no
// allocation, no std:: containers, no exceptions, fixed-width integers.
#include "kernels/tessera_accel.h"

#include <cstdint>
#include <cstring>

#include "kernels/accel_add.h"
#include "kernels/accel_common.h"
#include "kernels/accel_conv.h"
#include "kernels/accel_pool.h"
#include "kernels/kernel_abi.h"

namespace tessera {
namespace kernel {

#ifdef TESSERA_KERNEL_COUNT
KernelCounters& kernel_counters() {
  static KernelCounters counters;
  return counters;
}
#endif

// Burst-reads count 32-bit words of the program starting at word offset.
static void read_words(const uint32_t* program, uint32_t offset, uint32_t* dst, uint32_t count) {
read_words_loop:
  for (uint32_t i = 0; i < count; ++i) {
#pragma HLS pipeline II = 1
#pragma HLS loop_tripcount min = 16 max = 64 avg = 46
    dst[i] = program[offset + i];
  }
}

static void write_status(uint32_t* status, uint32_t code, uint32_t layer) {
  status[0] = code;
  status[1] = layer;
}

// Runs one validated layer on one image (image = that image's arena base).
static void run_layer(const abi::LayerDesc& d, const weight_t* weights, const int32_t* quant, act_t* image) {
  switch (d.op) {
    case abi::kOpConv: conv_layer(d, weights, quant, image); break;
    case abi::kOpPool: pool_layer(d, quant, image); break;
    case abi::kOpAdd: add_layer(d, quant, image); break;
    default: break;  // unreachable: layer_fits() rejects every other op
  }
}

}  // namespace kernel
}  // namespace tessera

// Depths below are only for C/RTL co-simulation (how many elements the cosim testbench's buffers
// hold); they do not size anything in hardware. program: header + kMaxLayers descriptors.
extern "C" void tessera_accel(const uint32_t* program, const int8_t* weights, const int32_t* quant, int8_t* arena,
                              uint32_t* status) {
  // One port a line, as Vitis reads them.
  // clang-format off
#pragma HLS INTERFACE mode = m_axi port = program bundle = gmem0 offset = slave depth = 47120 max_read_burst_length = 64 num_read_outstanding = 4 max_write_burst_length = 2 num_write_outstanding = 1
#pragma HLS INTERFACE mode = m_axi port = weights bundle = gmem1 offset = slave depth = 4194304 max_widen_bitwidth = 512 max_read_burst_length = 256 num_read_outstanding = 16 max_write_burst_length = 2 num_write_outstanding = 1
#pragma HLS INTERFACE mode = m_axi port = quant bundle = gmem2 offset = slave depth = 65536 max_widen_bitwidth = 512 max_read_burst_length = 64 num_read_outstanding = 4 max_write_burst_length = 2 num_write_outstanding = 1
#pragma HLS INTERFACE mode = m_axi port = arena bundle = gmem3 offset = slave depth = 4194304 max_widen_bitwidth = 512 max_read_burst_length = 256 num_read_outstanding = 16 max_write_burst_length = 256 num_write_outstanding = 16
#pragma HLS INTERFACE mode = m_axi port = status bundle = gmem4 offset = slave depth = 2 max_read_burst_length = 2 num_read_outstanding = 1 max_write_burst_length = 2 num_write_outstanding = 1
#pragma HLS INTERFACE mode = s_axilite port = program bundle = control
#pragma HLS INTERFACE mode = s_axilite port = weights bundle = control
#pragma HLS INTERFACE mode = s_axilite port = quant bundle = control
#pragma HLS INTERFACE mode = s_axilite port = arena bundle = control
#pragma HLS INTERFACE mode = s_axilite port = status bundle = control
#pragma HLS INTERFACE mode = s_axilite port = return bundle = control
  // clang-format on
  using namespace tessera;

  uint32_t header_words[abi::kHeaderWords];
  kernel::read_words(program, 0, header_words, abi::kHeaderWords);
  abi::ProgramHeader header;
  memcpy(&header, header_words, sizeof(header));
  if (header.magic != abi::kProgramMagic || header.version != abi::kAbiVersion ||
      header.layer_count > abi::kMaxLayers) {
    kernel::write_status(status, abi::kRunBadProgram, 0);
    return;
  }

layers:
  for (uint32_t l = 0; l < header.layer_count; ++l) {
#pragma HLS loop_tripcount min = 1 max = 1024 avg = 30
    uint32_t desc_words[abi::kLayerWords];
    kernel::read_words(program, abi::kHeaderWords + l * abi::kLayerWords, desc_words, abi::kLayerWords);
    abi::LayerDesc desc;
    memcpy(&desc, desc_words, sizeof(desc));
    TESSERA_COUNT_LAYER(l);
    if (!abi::layer_fits(desc)) {
      kernel::write_status(status, abi::kRunBadLayer, l);
      return;
    }
  images:
    for (uint32_t n = 0; n < header.batch; ++n) {
#pragma HLS loop_tripcount min = 1 max = 64 avg = 8
      int8_t* image = arena + static_cast<uint64_t>(n) * header.arena_image_bytes;
      kernel::run_layer(desc, weights, quant, image);
    }
  }
  kernel::write_status(status, abi::kRunOk, 0);
}
