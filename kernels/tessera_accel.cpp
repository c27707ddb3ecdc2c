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

// The on-chip buffers every layer engine shares (accel_conv.h, accel_pool.h): ping-pong input
// and weight tiles in abi::kBanks single-byte banks, ping-pong int32 accumulator tiles, and the
// ping-pong int8 staging tiles of the store half (one requantised into, one written out).
struct Buffers {
  act_t in_buf[2][kBanks][kInBankRows];
  weight_t w_buf[2][kBanks][kWBankRows];
  acc_t out_buf[2][kOutputBufferElems];
  act_t stage[2][kBanks][kStageBankRows];
};

// Runs one validated layer on one image (image = that image's arena base).
static void run_layer(const abi::LayerDesc& d, const weight_t* weights, const int32_t* quant, act_t* image,
                      Buffers& b) {
  switch (d.op) {
    case abi::kOpConv: conv_layer(d, weights, quant, image, b.in_buf, b.w_buf, b.out_buf, b.stage); break;
    case abi::kOpPool: pool_layer(d, quant, image, b.in_buf, b.out_buf[0], b.stage[0]); break;
    case abi::kOpAdd: add_layer(d, quant, image, b.in_buf, b.stage); break;
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
  // Static: one set for the kernel's lifetime (and off the C simulation's stack, which makes the
  // C simulation non-reentrant: one launch at a time per process).
  static kernel::Buffers buffers;
#pragma HLS array_partition variable = buffers.in_buf complete dim = 1
#pragma HLS array_partition variable = buffers.in_buf complete dim = 2
#pragma HLS array_partition variable = buffers.w_buf complete dim = 1
#pragma HLS array_partition variable = buffers.w_buf complete dim = 2
#pragma HLS array_partition variable = buffers.out_buf complete dim = 1
#pragma HLS array_partition variable = buffers.out_buf cyclic factor = kernel::kMacLanes dim = 2
#pragma HLS array_partition variable = buffers.stage complete dim = 1
#pragma HLS array_partition variable = buffers.stage complete dim = 2
#pragma HLS bind_storage variable = buffers.in_buf type = ram_2p impl = bram
#pragma HLS bind_storage variable = buffers.w_buf type = ram_2p impl = bram
#pragma HLS bind_storage variable = buffers.stage type = ram_2p impl = bram
#if TESSERA_OUT_URAM
  // Two lanes' int32 per 72-bit URAM word: 32 URAMs per accumulator tile, not 64.
#pragma HLS array_reshape variable = buffers.out_buf cyclic factor = 2 dim = 2
#pragma HLS bind_storage variable = buffers.out_buf type = ram_2p impl = uram
#else
#pragma HLS bind_storage variable = buffers.out_buf type = ram_2p impl = bram
#endif
  // The conv and pool engines share one instance of the load, requantise and write functions
  // (the requantisers and the beat crossbars exist once).
#pragma HLS allocation function instances = load_input_tile limit = 1
#pragma HLS allocation function instances = requant_tile limit = 1
#pragma HLS allocation function instances = write_tile limit = 1

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
      kernel::run_layer(desc, weights, quant, image, buffers);
    }
  }
  kernel::write_status(status, abi::kRunOk, 0);
}
