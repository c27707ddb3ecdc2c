#include <cstdlib>

#include "accel/device/emu/emu_kernels.h"

namespace tessera::emu {

void pack_weights(const int8_t* weights, uint32_t m, uint32_t k, int32_t* packed) {
  const uint32_t pairs = (k + 1) / 2;
  for (uint32_t m0 = 0; m0 < m; m0 += kGemmRows) {
    const uint32_t rows = m - m0 < kGemmRows ? m - m0 : kGemmRows;
    int32_t* block = packed + static_cast<size_t>(m0) * pairs;
    for (uint32_t p = 0; p < pairs; ++p) {
      for (uint32_t r = 0; r < rows; ++r) {
        const int8_t* row = weights + static_cast<size_t>(m0 + r) * k;
        const uint16_t lo = static_cast<uint16_t>(static_cast<int16_t>(row[2 * p]));
        const uint16_t hi = 2 * p + 1 < k ? static_cast<uint16_t>(static_cast<int16_t>(row[2 * p + 1])) : 0;
        block[p * rows + r] = static_cast<int32_t>(static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16));
      }
    }
  }
}

const EmuKernels& emu_kernels() {
  static const EmuKernels* selected = [] {
    const EmuKernels* avx2 = avx2_kernels();
    if (avx2 != nullptr && std::getenv("TESSERA_EMU_SCALAR") == nullptr) return avx2;
    return &scalar_kernels();
  }();
  return *selected;
}

}  // namespace tessera::emu
