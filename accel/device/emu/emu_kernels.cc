#include <cstdlib>
#include <string>

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

void pack_weights_quads(const int8_t* weights, uint32_t m, uint32_t k, int32_t* packed) {
  const uint32_t quads = (k + 3) / 4;
  for (uint32_t m0 = 0; m0 < m; m0 += kVnniRows) {
    const uint32_t rows = m - m0 < kVnniRows ? m - m0 : kVnniRows;
    int32_t* block = packed + packed_quad_words(m0, k);
    for (uint32_t r = 0; r < rows; ++r) {
      const int8_t* row = weights + static_cast<size_t>(m0 + r) * k;
      uint32_t sum = 0;
      for (uint32_t q = 0; q < quads; ++q) {
        uint32_t word = 0;
        for (uint32_t b = 0; b < 4 && 4 * q + b < k; ++b) {
          word |= static_cast<uint32_t>(static_cast<uint8_t>(row[4 * q + b])) << (8 * b);
          sum += static_cast<uint32_t>(static_cast<int32_t>(row[4 * q + b]));
        }
        block[q * rows + r] = static_cast<int32_t>(word);
      }
      block[static_cast<size_t>(quads) * rows + r] = static_cast<int32_t>(0u - 128u * sum);
    }
  }
}

void pack_tap_quads(const int8_t* weights, uint32_t m, uint32_t channels, uint32_t taps, int32_t* packed) {
  const uint32_t per_tap = (channels + 3) / 4, quads = taps * per_tap;
  for (uint32_t m0 = 0; m0 < m; m0 += kVnniRows) {
    const uint32_t rows = m - m0 < kVnniRows ? m - m0 : kVnniRows;
    int32_t* block = packed + packed_quad_words(m0, 4 * quads);
    for (uint32_t r = 0; r < rows; ++r) {
      const int8_t* w = weights + static_cast<size_t>(m0 + r) * channels * taps;  // [channels][taps]
      uint32_t sum = 0;
      for (uint32_t t = 0; t < taps; ++t) {
        for (uint32_t c = 0; c < per_tap; ++c) {
          uint32_t word = 0;
          for (uint32_t b = 0; b < 4 && 4 * c + b < channels; ++b) {
            const int8_t v = w[static_cast<size_t>(4 * c + b) * taps + t];
            word |= static_cast<uint32_t>(static_cast<uint8_t>(v)) << (8 * b);
            sum += static_cast<uint32_t>(static_cast<int32_t>(v));
          }
          block[static_cast<size_t>(t * per_tap + c) * rows + r] = static_cast<int32_t>(word);
        }
      }
      block[static_cast<size_t>(quads) * rows + r] = static_cast<int32_t>(0u - 128u * sum);
    }
  }
}

std::vector<KernelPath> kernel_paths() {
#if defined(__x86_64__)
  const char* vnni = "CPU lacks AVX-512 VNNI";
  const char* avxvnni = "CPU lacks AVX-VNNI";
#else
  const char* vnni = "x86-64 only";
  const char* avxvnni = vnni;
#endif
#if defined(__x86_64__) || defined(__i386__)
  const char* avx2 = "CPU lacks AVX2";
#else
  const char* avx2 = "x86 only";
#endif
#if defined(__aarch64__) || defined(__arm__)
  const char* neon = "CPU lacks NEON";
#else
  const char* neon = "ARM only";
#endif
#if defined(__aarch64__)
  const char* neon_dot = "CPU lacks the Armv8.2 dot product (asimddp)";
#elif defined(__arm__)
  const char* neon_dot = "aarch64 only";
#else
  const char* neon_dot = neon;
#endif
  const auto path = [](const char* id, const EmuKernels* k, const char* why) {
    return KernelPath{id, k, k != nullptr ? std::string() : std::string(why)};
  };
  return {
      path("avx512-vnni", vnni512_kernels(), vnni), path("avx-vnni", avxvnni_kernels(), avxvnni),
      path("avx2", avx2_kernels(), avx2),           path("neon-dot", neon_dot_kernels(), neon_dot),
      path("neon", neon_kernels(), neon),           path("scalar", &scalar_kernels(), ""),
  };
}

Result<const EmuKernels*> select_kernels() {
  const std::vector<KernelPath> paths = kernel_paths();
  const char* forced = std::getenv("TESSERA_EMU_KERNELS");
  if (forced == nullptr && std::getenv("TESSERA_EMU_SCALAR") != nullptr) forced = "scalar";
  std::string known, available;
  const EmuKernels* fastest = nullptr;
  for (const KernelPath& p : paths) {
    known += std::string(known.empty() ? "" : "|") + p.id;
    if (p.kernels == nullptr) continue;
    available += std::string(available.empty() ? "" : ", ") + p.id;
    if (fastest == nullptr) fastest = p.kernels;
  }
  if (forced == nullptr) return fastest;
  for (const KernelPath& p : paths) {
    if (std::string(forced) != p.id) continue;
    if (p.kernels != nullptr) return p.kernels;
    return Status::failed_precondition(std::string("TESSERA_EMU_KERNELS=") + forced + ": " + p.missing +
                                       " (this build and CPU have " + available + ")");
  }
  return Status::invalid_argument(std::string("TESSERA_EMU_KERNELS=") + forced + ": not one of " + known);
}

const EmuKernels& emu_kernels() {
  static const EmuKernels* selected = [] {
    Result<const EmuKernels*> chosen = select_kernels();
    if (chosen.is_ok()) return *chosen;
    for (const KernelPath& p : kernel_paths()) {
      if (p.kernels != nullptr) return p.kernels;
    }
    return &scalar_kernels();
  }();
  return *selected;
}

std::vector<const EmuKernels*> available_kernels() {
  std::vector<const EmuKernels*> all{&scalar_kernels()};
  for (const EmuKernels* simd :
       {avx2_kernels(), avxvnni_kernels(), vnni512_kernels(), neon_kernels(), neon_dot_kernels()}) {
    if (simd != nullptr) all.push_back(simd);
  }
  return all;
}

}  // namespace tessera::emu
