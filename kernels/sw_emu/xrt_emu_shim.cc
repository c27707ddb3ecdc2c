// The device side of the emulated XRT device: built as libxrt_core.so.2, the shim libxrt_coreutil
// loads from $XILINX_XRT/lib. It holds the HLS kernel itself (kernels/tessera_accel.cpp, compiled
// into this library from the same text as tessera_kernel_csim) and gives the emulated
// libxrt_coreutil one entry point to run it on a compute unit's buffers.
#include <cstdint>

#include "kernels/tessera_accel.h"

extern "C" __attribute__((visibility("default"))) void tessera_xrt_emu_kernel(const uint32_t* program,
                                                                              const int8_t* weights,
                                                                              const int32_t* quant, int8_t* arena,
                                                                              uint32_t* status) {
  tessera_accel(program, weights, quant, arena, status);
}
