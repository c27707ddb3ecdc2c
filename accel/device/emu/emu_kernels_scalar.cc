// Portable inner loops (CPUs without AVX2 or NEON, and TESSERA_EMU_SCALAR=1): plain loops over
// fixed-size blocks that the compiler may vectorise (SSE2, or NEON on aarch64) on its own.
#include <algorithm>

#include "accel/device/emu/emu_kernels.h"
#include "kernels/kernel_abi.h"

namespace tessera::emu {
namespace {

// Output channels and pixels of one scalar block; the accumulators stay in registers/L1.
constexpr uint32_t kRows = 4;
constexpr uint32_t kCols = 64;

void requantize_row_scalar(const int32_t* acc, uint32_t n, int32_t bias, int32_t multiplier, int32_t shift, int32_t lo,
                           int32_t hi, int8_t* out) {
  for (uint32_t j = 0; j < n; ++j) {
    out[j] = static_cast<int8_t>(abi::requantize(wrap_add(acc[j], bias), multiplier, shift, lo, hi));
  }
}

void mac_row_scalar(uint32_t* acc, const int8_t* x, int32_t w, uint32_t n) {
  for (uint32_t j = 0; j < n; ++j) acc[j] += static_cast<uint32_t>(w * x[j]);
}

void mac_taps_scalar(uint32_t* acc, const int8_t* const* src, const int32_t* w, uint32_t taps, uint32_t n) {
  for (uint32_t t = 0; t < taps; ++t) mac_row_scalar(acc, src[t], w[t], n);
}

// Accumulates rows [m0, m0 + rows) x columns [n0, n0 + cols) over all of k, modulo 2^32 (unsigned
// arithmetic: the accelerator's int32 accumulator wraps, and signed overflow would be UB).
template <uint32_t Rows>
void block_sums(const GemmArgs& g, uint32_t m0, uint32_t n0, uint32_t cols, uint32_t (*acc)[kCols]) {
  for (uint32_t r = 0; r < Rows; ++r) std::fill(acc[r], acc[r] + kCols, 0u);
  const int8_t* w[Rows];
  for (uint32_t r = 0; r < Rows; ++r) w[r] = g.weights + static_cast<size_t>(m0 + r) * g.k;
  for (uint32_t kk = 0; kk < g.k; ++kk) {
    const int8_t* c = g.col + kk * g.col_stride + n0;
    for (uint32_t r = 0; r < Rows; ++r) {
      const int16_t wv = w[r][kk];  // int16 x int8 products: widening multiplies (NEON smlal)
      uint32_t* a = acc[r];
      for (uint32_t j = 0; j < cols; ++j) a[j] += static_cast<uint32_t>(wv * c[j]);
    }
  }
}

void gemm_scalar(const GemmArgs& g) {
  alignas(64) uint32_t acc[kRows][kCols];
  for (uint32_t n0 = 0; n0 < g.n; n0 += kCols) {
    const uint32_t cols = std::min(kCols, g.n - n0);
    for (uint32_t m0 = 0; m0 < g.m; m0 += kRows) {
      const uint32_t rows = std::min(kRows, g.m - m0);
      switch (rows) {
        case 4: block_sums<4>(g, m0, n0, cols, acc); break;
        case 3: block_sums<3>(g, m0, n0, cols, acc); break;
        case 2: block_sums<2>(g, m0, n0, cols, acc); break;
        default: block_sums<1>(g, m0, n0, cols, acc); break;
      }
      for (uint32_t r = 0; r < rows; ++r) {
        const uint32_t i = m0 + r;
        requantize_row_scalar(reinterpret_cast<const int32_t*>(acc[r]), cols, g.q.bias[i], g.q.multiplier[i],
                              g.q.shift[i], g.q.lo, g.q.hi, g.out + i * g.out_stride + n0);
      }
    }
  }
}

}  // namespace

void max_row_scalar(int8_t* acc, const int8_t* x, uint32_t n) {
  for (uint32_t j = 0; j < n; ++j) acc[j] = std::max(acc[j], x[j]);
}

void add_row_scalar(const int8_t* a, const int8_t* b, uint32_t n, int32_t multiplier_a, int32_t multiplier_b,
                    int32_t shift, int32_t lo, int32_t hi, int8_t* y) {
  for (uint32_t j = 0; j < n; ++j) {
    y[j] = static_cast<int8_t>(abi::requantize_add(a[j], b[j], multiplier_a, multiplier_b, shift, lo, hi));
  }
}

const EmuKernels& scalar_kernels() {
  static const EmuKernels kernels{.id = "scalar",
                                  .name = "scalar",
                                  .pack = nullptr,
                                  .packed_words = nullptr,
                                  .gemm_rows = kRows,
                                  .gemm = &gemm_scalar,
                                  .mac_row = &mac_row_scalar,
                                  .mac_taps = &mac_taps_scalar,
                                  .requantize_row = &requantize_row_scalar,
                                  .max_row = &max_row_scalar,
                                  .add_row = &add_row_scalar};
  return kernels;
}

}  // namespace tessera::emu
