// The AVX-VNNI GEMM (the VEX form of vpdpbusd on 256-bit vectors, for CPUs with AVX-VNNI but
// without AVX-512); the element loops are AVX2's. Only functions marked TESSERA_AVXVNNI use
// AVX-VNNI, and avxvnni_kernels() offers them only when the CPU reports avxvnni and avx2.
//
// Exactness as in emu_conv_vnni512.cc: u8 (x + 128) x s8 sums of four per int32 lane with wrap,
// the -128 * sum(w) word added with the bias. The micro-kernel is 6 channels x 16 pixels (12 ymm
// accumulators, 2 panel vectors, one broadcast weight quad: 15 of the 16 registers).
// Requantisation: emu_avx2_requant.h.
#include "accel/device/emu/emu_kernels.h"

#if defined(__x86_64__)

#include <cpuid.h>
#include <immintrin.h>

#include <cstring>
#include <vector>

#include "accel/device/emu/emu_avx2_requant.h"
#include "accel/device/emu/emu_vnni_panel.h"

#define TESSERA_AVXVNNI __attribute__((target("avx2,avxvnni")))

namespace tessera::emu {
namespace {

// acc += the four u8 x s8 products of each lane of b and w, wrapping (the VEX vpdpbusd). In
// assembly, as in emu_conv_vnni512.cc: GCC 12 copies and spills the intrinsic's accumulators.
TESSERA_AVXVNNI inline void dpbusd(__m256i& acc, __m256i b, __m256i w) {
  asm("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(b), "x"(w));
}

// Both halves of row R's accumulators += the panel x row R's weight quad, when row R exists.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define TESSERA_DP_ROW(R)                                 \
  if constexpr (Rows > R) {                               \
    const __m256i w = _mm256_set1_epi32(a[q * Rows + R]); \
    dpbusd(acc##R##0, b0, w);                             \
    dpbusd(acc##R##1, b1, w);                             \
  }
#define TESSERA_SAVE_ROW(R)                                                 \
  if constexpr (Rows > R) {                                                 \
    _mm256_store_si256(reinterpret_cast<__m256i*>(sums[R]), acc##R##0);     \
    _mm256_store_si256(reinterpret_cast<__m256i*>(sums[R] + 8), acc##R##1); \
  }
// NOLINTEND(bugprone-macro-parentheses)

// Rows x 16 block over all quads; stores `valid` pixels per channel. The accumulators are named
// variables (GCC keeps an indexed array of them on the stack).
template <int Rows>
TESSERA_AVXVNNI void micro_kernel(const GemmArgs& g, const int32_t* a, const uint8_t* panel, uint32_t quads,
                                  uint32_t m0, uint32_t n0, uint32_t valid) {
  __m256i acc00 = _mm256_setzero_si256(), acc01 = acc00, acc10 = acc00, acc11 = acc00, acc20 = acc00, acc21 = acc00,
          acc30 = acc00, acc31 = acc00, acc40 = acc00, acc41 = acc00, acc50 = acc00, acc51 = acc00;
  for (uint32_t q = 0; q < quads; ++q) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + static_cast<size_t>(q) * 64));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + static_cast<size_t>(q) * 64 + 32));
    TESSERA_DP_ROW(0)
    TESSERA_DP_ROW(1)
    TESSERA_DP_ROW(2)
    TESSERA_DP_ROW(3)
    TESSERA_DP_ROW(4)
    TESSERA_DP_ROW(5)
  }
  alignas(32) int32_t sums[6][16];
  TESSERA_SAVE_ROW(0)
  TESSERA_SAVE_ROW(1)
  TESSERA_SAVE_ROW(2)
  TESSERA_SAVE_ROW(3)
  TESSERA_SAVE_ROW(4)
  TESSERA_SAVE_ROW(5)
  const int32_t* correction = a + static_cast<size_t>(quads) * Rows;
  for (int r = 0; r < Rows; ++r) {
    const uint32_t i = m0 + r;
    const avx2::RequantVec q =
        avx2::make_requant(wrap_add(g.q.bias[i], correction[r]), g.q.multiplier[i], g.q.shift[i], g.q.lo, g.q.hi);
    // sums[r] holds pixels 0-15; narrow16 wants 0-3, 8-11 then 4-7, 12-15.
    const __m256i lo = _mm256_load_si256(reinterpret_cast<const __m256i*>(sums[r]));
    const __m256i hi = _mm256_load_si256(reinterpret_cast<const __m256i*>(sums[r] + 8));
    const __m256i x = _mm256_permute2x128_si256(lo, hi, 0x20);
    const __m256i y = _mm256_permute2x128_si256(lo, hi, 0x31);
    const __m128i bytes = avx2::narrow16(avx2::requantize8(x, q), avx2::requantize8(y, q));
    int8_t* out = g.out + i * g.out_stride + n0;
    if (valid == 16) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out), bytes);
    } else {
      alignas(16) int8_t tmp[16];
      _mm_store_si128(reinterpret_cast<__m128i*>(tmp), bytes);
      std::memcpy(out, tmp, valid);
    }
  }
}

#undef TESSERA_DP_ROW
#undef TESSERA_SAVE_ROW

void gemm_avxvnni(const GemmArgs& g) {
  const uint32_t quads = (g.k + 3) / 4;
  thread_local std::vector<uint8_t> panel;
  if (panel.size() < static_cast<size_t>(quads) * 64) panel.resize(static_cast<size_t>(quads) * 64);
  for (uint32_t n0 = 0; n0 < g.n; n0 += 16) {
    const uint32_t valid = g.n - n0 < 16 ? g.n - n0 : 16;
    vnni::pack_quads(g.col + n0, g.col_stride, g.k, 1, panel.data());
    for (uint32_t m0 = 0; m0 < g.m; m0 += kVnniRows) {
      const int32_t* a = g.packed + packed_quad_words(m0, g.k);
      switch (g.m - m0 < kVnniRows ? g.m - m0 : kVnniRows) {
        case 6: micro_kernel<6>(g, a, panel.data(), quads, m0, n0, valid); break;
        case 5: micro_kernel<5>(g, a, panel.data(), quads, m0, n0, valid); break;
        case 4: micro_kernel<4>(g, a, panel.data(), quads, m0, n0, valid); break;
        case 3: micro_kernel<3>(g, a, panel.data(), quads, m0, n0, valid); break;
        case 2: micro_kernel<2>(g, a, panel.data(), quads, m0, n0, valid); break;
        default: micro_kernel<1>(g, a, panel.data(), quads, m0, n0, valid); break;
      }
    }
  }
}

// CPUID leaf 7, sub-leaf 1, EAX bit 4 (read directly: clang 14's __builtin_cpu_supports does
// not know "avxvnni"). The OS's saving of ymm state is part of the AVX2 check beside it.
bool cpu_has_avxvnni() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) == 0) return false;
  return ((eax >> 4) & 1u) != 0;
}

}  // namespace

const EmuKernels* avxvnni_kernels() {
  static const EmuKernels* kernels = []() -> const EmuKernels* {
    const EmuKernels* avx2 = avx2_kernels();
    if (avx2 == nullptr || !cpu_has_avxvnni()) return nullptr;
    static EmuKernels k = vnni::table_over_avx2(*avx2, "avx-vnni", "AVX-VNNI", &gemm_avxvnni);
    return &k;
  }();
  return kernels;
}

}  // namespace tessera::emu

#else  // not x86-64

namespace tessera::emu {
const EmuKernels* avxvnni_kernels() { return nullptr; }
}  // namespace tessera::emu

#endif
