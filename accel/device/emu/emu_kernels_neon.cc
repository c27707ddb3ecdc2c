// NEON (Advanced SIMD) inner loops of the emulator, for the boards' ARM cores (what the
// TESSERA_NEON mark means and when the loops are offered: accel/common/arm_neon_support.h).
//
// GEMM: a panel of 16 im2col columns is widened once per k to int16, and every channel's int8
// weight multiplies it with vmlal (int16 x int16 -> int32 lanes): exact, |w * x| <= 2^14, and
// int32 adds wrap like the accelerator's accumulator. Requantisation works on 64-bit lanes:
// vmull_s32 for acc * M, add the rounding term, an arithmetic shift right (vshl by -S), a
// saturating narrow to int32 (which keeps every value's order against lo and hi, both int32),
// then abi::requantize's clamp order: min(r, hi), then lo where r < lo.
#include "accel/device/emu/emu_kernels.h"

#if defined(__aarch64__) || defined(__arm__)

#include <cstring>

#include "accel/common/arm_neon_support.h"
#include "kernels/kernel_abi.h"

namespace tessera::emu {
namespace {

// Output channels of one GEMM block: 4 x 16 accumulators (16 q registers) fit aarch64's 32
// vector registers beside the widened panel; ARMv7 has 16, so 2 channels (8 accumulators).
#if defined(__aarch64__)
constexpr uint32_t kNeonRows = 4;
#else
constexpr uint32_t kNeonRows = 2;
#endif

// One output channel's requantisation constants, broadcast.
struct RequantNeon {
  int32x4_t bias;
  int32x2_t multiplier;
  int64x2_t round, right_shift;  // right_shift = -S: vshl by a negative count shifts right
  int32x4_t lo, hi;
};

TESSERA_NEON inline RequantNeon make_requant(int32_t bias, int32_t multiplier, int32_t shift, int32_t lo, int32_t hi) {
  RequantNeon q;
  q.bias = vdupq_n_s32(bias);
  q.multiplier = vdup_n_s32(multiplier);
  q.round = vdupq_n_s64(static_cast<int64_t>(1) << (shift - 1));
  q.right_shift = vdupq_n_s64(-static_cast<int64_t>(shift));
  q.lo = vdupq_n_s32(lo);
  q.hi = vdupq_n_s32(hi);
  return q;
}

// (p + round) >> S, arithmetic, saturated to int32: a value beyond int32 stays beyond lo and hi.
TESSERA_NEON inline int32x2_t round_shift(int64x2_t p, const RequantNeon& q) {
  return vqmovn_s64(vshlq_s64(vaddq_s64(p, q.round), q.right_shift));
}

// abi::requantize's clamp, in its order: r < lo ? lo : min(r, hi).
TESSERA_NEON inline int32x4_t clamp(int32x4_t r, const RequantNeon& q) {
  return vbslq_s32(vcltq_s32(r, q.lo), q.lo, vminq_s32(r, q.hi));
}

// Four accumulators -> four requantised values (acc + bias wraps in int32, as wrap_add).
TESSERA_NEON inline int32x4_t requantize4(int32x4_t acc, const RequantNeon& q) {
  acc = vaddq_s32(acc, q.bias);
  const int32x2_t low = round_shift(vmull_s32(vget_low_s32(acc), q.multiplier), q);
  const int32x2_t high = round_shift(vmull_s32(vget_high_s32(acc), q.multiplier), q);
  return clamp(vcombine_s32(low, high), q);
}

// Low bytes of eight int32 lanes, in order: a truncating narrow is the two's-complement wrap of a
// C++ cast to int8_t.
TESSERA_NEON inline int8x8_t narrow8(int32x4_t a, int32x4_t b) {
  return vmovn_s16(vcombine_s16(vmovn_s32(a), vmovn_s32(b)));
}

// acc[0..4) += w * x for 16 int16 pixels held as two int16x8.
TESSERA_NEON inline void mac16(int32x4_t (&acc)[4], int16x8_t x0, int16x8_t x1, int16_t w) {
  acc[0] = vmlal_n_s16(acc[0], vget_low_s16(x0), w);
  acc[1] = vmlal_n_s16(acc[1], vget_high_s16(x0), w);
  acc[2] = vmlal_n_s16(acc[2], vget_low_s16(x1), w);
  acc[3] = vmlal_n_s16(acc[3], vget_high_s16(x1), w);
}

// Requantises 16 accumulators of channel i and stores `valid` of them at out.
TESSERA_NEON inline void store_requantized16(const GemmArgs& g, uint32_t i, const int32x4_t (&acc)[4], int8_t* out,
                                             uint32_t valid) {
  const RequantNeon q = make_requant(g.q.bias[i], g.q.multiplier[i], g.q.shift[i], g.q.lo, g.q.hi);
  const int8x16_t bytes = vcombine_s8(narrow8(requantize4(acc[0], q), requantize4(acc[1], q)),
                                      narrow8(requantize4(acc[2], q), requantize4(acc[3], q)));
  if (valid == kGemmPanel) {
    vst1q_s8(out, bytes);
  } else {
    int8_t tmp[kGemmPanel];
    vst1q_s8(tmp, bytes);
    std::memcpy(out, tmp, valid);
  }
}

// Rows x 16 block over all of k: channels [m0, m0 + Rows), columns [n0, n0 + 16) (the im2col
// rows are readable and zero up to the panel's end), `valid` of the columns stored.
template <uint32_t Rows>
TESSERA_NEON void gemm_block(const GemmArgs& g, uint32_t m0, uint32_t n0, uint32_t valid) {
  int32x4_t acc[Rows][4];
  const int8_t* w[Rows];
  for (uint32_t r = 0; r < Rows; ++r) {
    for (int32x4_t& a : acc[r]) a = vdupq_n_s32(0);
    w[r] = g.weights + static_cast<size_t>(m0 + r) * g.k;
  }
  const int8_t* col = g.col + n0;
  for (uint32_t kk = 0; kk < g.k; ++kk, col += g.col_stride) {
    const int8x16_t x = vld1q_s8(col);
    const int16x8_t x0 = vmovl_s8(vget_low_s8(x)), x1 = vmovl_s8(vget_high_s8(x));
    for (uint32_t r = 0; r < Rows; ++r) mac16(acc[r], x0, x1, w[r][kk]);
  }
  for (uint32_t r = 0; r < Rows; ++r) {
    store_requantized16(g, m0 + r, acc[r], g.out + (m0 + r) * g.out_stride + n0, valid);
  }
}

TESSERA_NEON void gemm_neon(const GemmArgs& g) {
  for (uint32_t n0 = 0; n0 < g.n; n0 += kGemmPanel) {
    const uint32_t valid = g.n - n0 < kGemmPanel ? g.n - n0 : kGemmPanel;
    uint32_t m0 = 0;
    for (; m0 + kNeonRows <= g.m; m0 += kNeonRows) gemm_block<kNeonRows>(g, m0, n0, valid);
    for (; m0 < g.m; ++m0) gemm_block<1>(g, m0, n0, valid);
  }
}

// 16 pixels per step: int8 -> int16, then vmlal into the four int32 vectors of acc.
TESSERA_NEON void mac_row_neon(uint32_t* acc, const int8_t* x, int32_t w, uint32_t n) {
  const int16_t w16 = static_cast<int16_t>(w);
  uint32_t j = 0;
  for (; j + 16 <= n; j += 16) {
    int32_t* a = reinterpret_cast<int32_t*>(acc + j);
    int32x4_t sums[4] = {vld1q_s32(a), vld1q_s32(a + 4), vld1q_s32(a + 8), vld1q_s32(a + 12)};
    const int8x16_t xv = vld1q_s8(x + j);
    mac16(sums, vmovl_s8(vget_low_s8(xv)), vmovl_s8(vget_high_s8(xv)), w16);
    for (int v = 0; v < 4; ++v) vst1q_s32(a + 4 * v, sums[v]);
  }
  for (; j < n; ++j) acc[j] += static_cast<uint32_t>(w * x[j]);
}

// Sums over taps of w[t] * src[t][j .. j + 16), the four accumulators in registers over all taps.
TESSERA_NEON inline void tap_sums16(const int8_t* const* src, const int32_t* w, uint32_t taps, uint32_t j,
                                    int32x4_t (&sums)[4]) {
  for (int32x4_t& s : sums) s = vdupq_n_s32(0);
  for (uint32_t t = 0; t < taps; ++t) {
    const int8x16_t xv = vld1q_s8(src[t] + j);
    mac16(sums, vmovl_s8(vget_low_s8(xv)), vmovl_s8(vget_high_s8(xv)), static_cast<int16_t>(w[t]));
  }
}

TESSERA_NEON void mac_taps_neon(uint32_t* acc, const int8_t* const* src, const int32_t* w, uint32_t taps, uint32_t n) {
  int32x4_t sums[4];
  uint32_t j = 0;
  for (; j + 16 <= n; j += 16) {
    tap_sums16(src, w, taps, j, sums);
    int32_t* a = reinterpret_cast<int32_t*>(acc + j);
    for (int v = 0; v < 4; ++v) vst1q_s32(a + 4 * v, vaddq_s32(vld1q_s32(a + 4 * v), sums[v]));
  }
  if (j == n) return;
  if (n >= 16) {
    // Tail: the last 16 pixels again (the rows are readable there), adding only the new ones.
    int32_t tail[16];
    tap_sums16(src, w, taps, n - 16, sums);
    for (int v = 0; v < 4; ++v) vst1q_s32(tail + 4 * v, sums[v]);
    for (uint32_t k = j - (n - 16); k < 16; ++k) acc[n - 16 + k] += static_cast<uint32_t>(tail[k]);
    return;
  }
  for (; j < n; ++j) {
    uint32_t sum = 0;
    for (uint32_t t = 0; t < taps; ++t) sum += static_cast<uint32_t>(w[t] * src[t][j]);
    acc[j] += sum;
  }
}

TESSERA_NEON void requantize_row_neon(const int32_t* acc, uint32_t n, int32_t bias, int32_t multiplier, int32_t shift,
                                      int32_t lo, int32_t hi, int8_t* out) {
  const RequantNeon q = make_requant(bias, multiplier, shift, lo, hi);
  uint32_t j = 0;
  for (; j + 8 <= n; j += 8) {
    vst1_s8(out + j, narrow8(requantize4(vld1q_s32(acc + j), q), requantize4(vld1q_s32(acc + j + 4), q)));
  }
  for (; j < n; ++j) out[j] = static_cast<int8_t>(abi::requantize(wrap_add(acc[j], bias), multiplier, shift, lo, hi));
}

// 16 bytes per step (vmax.s8), the tail in scalar.
TESSERA_NEON void max_row_neon(int8_t* acc, const int8_t* x, uint32_t n) {
  uint32_t j = 0;
  for (; j + 16 <= n; j += 16) vst1q_s8(acc + j, vmaxq_s8(vld1q_s8(acc + j), vld1q_s8(x + j)));
  max_row_scalar(acc + j, x + j, n - j);
}

// Two int32x2 halves of a * M_a + b * M_b in 64 bits (|a * M_a| <= 2^38: no overflow), rounded
// and shifted as abi::requantize_add.
TESSERA_NEON inline int32x2_t add_half(int32x2_t a, int32x2_t b, int32x2_t multiplier_a, int32x2_t multiplier_b,
                                       const RequantNeon& q) {
  return round_shift(vmlal_s32(vmull_s32(a, multiplier_a), b, multiplier_b), q);
}

// Eight elements per step: int8 -> int32, both products and their sum in 64-bit lanes.
TESSERA_NEON void add_row_neon(const int8_t* a, const int8_t* b, uint32_t n, int32_t multiplier_a, int32_t multiplier_b,
                               int32_t shift, int32_t lo, int32_t hi, int8_t* y) {
  const RequantNeon q = make_requant(0, 0, shift, lo, hi);
  const int32x2_t ma = vdup_n_s32(multiplier_a), mb = vdup_n_s32(multiplier_b);
  uint32_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const int16x8_t a16 = vmovl_s8(vld1_s8(a + j)), b16 = vmovl_s8(vld1_s8(b + j));
    int32x4_t out[2];
    for (int h = 0; h < 2; ++h) {
      const int32x4_t a32 = vmovl_s16(h == 0 ? vget_low_s16(a16) : vget_high_s16(a16));
      const int32x4_t b32 = vmovl_s16(h == 0 ? vget_low_s16(b16) : vget_high_s16(b16));
      out[h] = clamp(vcombine_s32(add_half(vget_low_s32(a32), vget_low_s32(b32), ma, mb, q),
                                  add_half(vget_high_s32(a32), vget_high_s32(b32), ma, mb, q)),
                     q);
    }
    vst1_s8(y + j, narrow8(out[0], out[1]));
  }
  add_row_scalar(a + j, b + j, n - j, multiplier_a, multiplier_b, shift, lo, hi, y + j);
}

}  // namespace

const EmuKernels* neon_kernels() {
  static const EmuKernels kernels{.id = "neon",
                                  .name = "NEON",
                                  .pack = nullptr,
                                  .packed_words = nullptr,
                                  .gemm_rows = kNeonRows,
                                  .gemm = &gemm_neon,
                                  .mac_row = &mac_row_neon,
                                  .mac_taps = &mac_taps_neon,
                                  .requantize_row = &requantize_row_neon,
                                  .max_row = &max_row_neon,
                                  .add_row = &add_row_neon};
  static const bool available = cpu_has_neon();
  return available ? &kernels : nullptr;
}

}  // namespace tessera::emu

#else  // not ARM

namespace tessera::emu {
const EmuKernels* neon_kernels() { return nullptr; }
}  // namespace tessera::emu

#endif
