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
    if (std::getenv("TESSERA_EMU_SCALAR") != nullptr) return &scalar_kernels();
    if (const EmuKernels* avx2 = avx2_kernels()) return avx2;
    if (const EmuKernels* neon = neon_kernels()) return neon;
    return &scalar_kernels();
  }();
  return *selected;
}

std::vector<const EmuKernels*> available_kernels() {
  std::vector<const EmuKernels*> all{&scalar_kernels()};
  for (const EmuKernels* simd : {avx2_kernels(), neon_kernels()}) {
    if (simd != nullptr) all.push_back(simd);
  }
  return all;
}

}  // namespace tessera::emu
