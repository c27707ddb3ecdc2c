// The emulator's GEMM on the Armv8.2 dot product (FEAT_DotProd, `sdot`), for aarch64 cores that
// have it (Cortex-A55/A76 and later, Neoverse/Graviton, Apple): TESSERA_EMU_KERNELS=neon-dot. The
// direct conv, requantise-a-row, pool and add loops are the NEON path's (emu_kernels_neon.cc).
//
// `sdot vd.4s, vn.16b, vm.4b[l]` adds to each int32 lane i of vd the four int8 x int8 products of
// bytes 4i..4i+3 of vn with bytes 4l..4l+3 of vm: 16 multiply-accumulates per instruction,
// against 4 for the NEON path's vmlal (which also needs the panel widened to int16 first). Both
// operands are signed, so unlike vpdpbusd (emu_vnni_panel.h) no +128 offset and no correction
// word: the sums are exactly sum w * x modulo 2^32 (the adds wrap, no saturation), like the
// accelerator's int32 accumulator.
//
// Layout: a panel of 16 im2col columns is regrouped by quads of k, each 16-byte vector holding 4
// pixels x 4 consecutive k (pack_panel); the weights are packed once at load in blocks of 4
// channels, each quad of k one 16-byte vector of 4 channels x 4 k (pack_weights_dot), so one
// sdot by lane l multiplies 4 pixels by channel l's quad. The micro-kernel is 4 channels x 16
// pixels: 16 accumulators, 4 panel vectors and 1 weight vector of the 32 registers.
//
// Only micro_kernel carries the dot product (the target attribute below: GCC's assembler takes
// sdot under armv8.2-a+dotprod, clang's under dotprod; `sdot` as inline assembly because clang
// 14's arm_neon.h declares vdotq_laneq_s32 only in a file built with dotprod). Everything else is
// armv8-a code, and neon_dot_kernels() offers the table only when the kernel reports
// HWCAP_ASIMDDP, so the build still runs on the ZCU102/ZCU104's Cortex-A53 (no dot product). A
// CPU with the dot product implements Armv8.2 or later (FEAT_DotProd is an Armv8.2 option), so
// micro_kernel's armv8.2-a is safe wherever it runs. aarch64 only: AArch32 has the instruction on
// some Armv8 cores, but the boards' 32-bit ARM (Zynq-7000, Cortex-A9) is Armv7 without it.
#include "accel/device/emu/emu_kernels.h"

#if defined(__aarch64__)

#include <asm/hwcap.h>
#include <sys/auxv.h>

#include <vector>

#include "accel/common/arm_neon_support.h"

#if defined(__clang__)
#define TESSERA_NEON_DOT __attribute__((target("dotprod")))
#else
#define TESSERA_NEON_DOT __attribute__((target("arch=armv8.2-a+dotprod")))
#endif

namespace tessera::emu {
namespace {

// Output channels of one micro-kernel block (and of one packed weight block).
constexpr uint32_t kDotRows = 4;

uint32_t quads_of(uint32_t k) { return (k + 3) / 4; }

// Blocks of kDotRows channels, the last one zero-padded to kDotRows: a block starting at channel
// c (a multiple of kDotRows) is at word c * quads.
size_t packed_dot_words(uint32_t m, uint32_t k) {
  return static_cast<size_t>((m + kDotRows - 1) / kDotRows * kDotRows) * quads_of(k);
}

// Word (q * kDotRows + r) of a block holds w[c + r][4q .. 4q + 3], zero past k and past m.
void pack_weights_dot(const int8_t* weights, uint32_t m, uint32_t k, int32_t* packed) {
  const uint32_t quads = quads_of(k);
  for (uint32_t m0 = 0; m0 < m; m0 += kDotRows) {
    int32_t* block = packed + packed_dot_words(m0, k);
    for (uint32_t q = 0; q < quads; ++q) {
      for (uint32_t r = 0; r < kDotRows; ++r) {
        uint32_t word = 0;
        for (uint32_t b = 0; b < 4 && m0 + r < m && 4 * q + b < k; ++b) {
          word |= static_cast<uint32_t>(static_cast<uint8_t>(weights[static_cast<size_t>(m0 + r) * k + 4 * q + b]))
                  << (8 * b);
        }
        block[q * kDotRows + r] = static_cast<int32_t>(word);
      }
    }
  }
}

// Four rows of 16 pixels -> four vectors of 4 pixels x the 4 rows (one quad of k per pixel).
TESSERA_NEON inline void transpose_quad(const int8x16_t (&r)[4], int8_t* out) {
  // Pairs of k per pixel (pixels 0-7, 8-15), then quads: 16-bit zips of the pairs.
  const int16x8_t a_lo = vreinterpretq_s16_s8(vzip1q_s8(r[0], r[1]));
  const int16x8_t a_hi = vreinterpretq_s16_s8(vzip2q_s8(r[0], r[1]));
  const int16x8_t b_lo = vreinterpretq_s16_s8(vzip1q_s8(r[2], r[3]));
  const int16x8_t b_hi = vreinterpretq_s16_s8(vzip2q_s8(r[2], r[3]));
  vst1q_s8(out, vreinterpretq_s8_s16(vzip1q_s16(a_lo, b_lo)));
  vst1q_s8(out + 16, vreinterpretq_s8_s16(vzip2q_s16(a_lo, b_lo)));
  vst1q_s8(out + 32, vreinterpretq_s8_s16(vzip1q_s16(a_hi, b_hi)));
  vst1q_s8(out + 48, vreinterpretq_s8_s16(vzip2q_s16(a_hi, b_hi)));
}

// panel[(q * 4 + v) * 16 + 4 * j + b] = x[4q + b][4v + j] for quads q, v < 4, j < 4, b < 4: the
// 16 columns at col, rows past k read as zero (col holds round_up(k, 2) rows of `stride` bytes,
// each readable for 16 bytes). A 4 x 16 byte transpose by zips, as vnni::pack_quads.
TESSERA_NEON void pack_panel(const int8_t* col, size_t stride, uint32_t k, int8_t* panel) {
  uint32_t q = 0;
  int8x16_t r[4];
  for (; 4 * q + 4 <= k; ++q) {
    const int8_t* rows = col + static_cast<size_t>(4 * q) * stride;
    for (uint32_t b = 0; b < 4; ++b) r[b] = vld1q_s8(rows + b * stride);
    transpose_quad(r, panel + static_cast<size_t>(q) * 64);
  }
  if (4 * q == k) return;
  // The last, partial quad: rows past k are zero (col has only round_up(k, 2) of them).
  for (uint32_t b = 0; b < 4; ++b) r[b] = 4 * q + b < k ? vld1q_s8(col + (4 * q + b) * stride) : vdupq_n_s8(0);
  transpose_quad(r, panel + static_cast<size_t>(q) * 64);
}

// Channel L's four accumulators (pixels 0-3, 4-7, 8-11, 12-15) += the panel's four vectors by
// channel L's quad in w. Named variables, not an array: GCC keeps an array of them in memory and
// loads and stores all 16 every quad.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define TESSERA_SDOT_ROW(L)                                                      \
  asm("sdot %0.4s, %1.16b, %2.4b[" #L "]" : "+w"(acc##L##0) : "w"(x0), "w"(wq)); \
  asm("sdot %0.4s, %1.16b, %2.4b[" #L "]" : "+w"(acc##L##1) : "w"(x1), "w"(wq)); \
  asm("sdot %0.4s, %1.16b, %2.4b[" #L "]" : "+w"(acc##L##2) : "w"(x2), "w"(wq)); \
  asm("sdot %0.4s, %1.16b, %2.4b[" #L "]" : "+w"(acc##L##3) : "w"(x3), "w"(wq))
#define TESSERA_SAVE_ROW(L)          \
  vst1q_s32(sums[L], acc##L##0);     \
  vst1q_s32(sums[L] + 4, acc##L##1); \
  vst1q_s32(sums[L] + 8, acc##L##2); \
  vst1q_s32(sums[L] + 12, acc##L##3)
// NOLINTEND(bugprone-macro-parentheses)

// The int32 sums of kDotRows channels x 16 pixels over all quads: w is the channels' packed
// block, panel the pack_panel of the pixels.
TESSERA_NEON_DOT void micro_kernel(const int8_t* w, const int8_t* panel, uint32_t quads,
                                   int32_t (&sums)[kDotRows][kGemmPanel]) {
  int32x4_t acc00 = vdupq_n_s32(0), acc01 = acc00, acc02 = acc00, acc03 = acc00, acc10 = acc00, acc11 = acc00,
            acc12 = acc00, acc13 = acc00, acc20 = acc00, acc21 = acc00, acc22 = acc00, acc23 = acc00, acc30 = acc00,
            acc31 = acc00, acc32 = acc00, acc33 = acc00;
  for (uint32_t q = 0; q < quads; ++q, panel += 64, w += 16) {
    const int8x16_t x0 = vld1q_s8(panel), x1 = vld1q_s8(panel + 16), x2 = vld1q_s8(panel + 32),
                    x3 = vld1q_s8(panel + 48);
    const int8x16_t wq = vld1q_s8(w);
    TESSERA_SDOT_ROW(0);
    TESSERA_SDOT_ROW(1);
    TESSERA_SDOT_ROW(2);
    TESSERA_SDOT_ROW(3);
  }
  TESSERA_SAVE_ROW(0);
  TESSERA_SAVE_ROW(1);
  TESSERA_SAVE_ROW(2);
  TESSERA_SAVE_ROW(3);
}

#undef TESSERA_SAVE_ROW
#undef TESSERA_SDOT_ROW

// Per 16-pixel panel: regroup it by quads once, then every block of 4 channels over it; the sums
// go through the NEON path's requantise-a-row (bias added in int32 with wrap, abi::requantize).
void gemm_neon_dot(const GemmArgs& g) {
  static const auto requantize_row = neon_kernels()->requantize_row;
  const uint32_t quads = quads_of(g.k);
  thread_local std::vector<int8_t> panel;
  if (panel.size() < static_cast<size_t>(quads) * 64) panel.resize(static_cast<size_t>(quads) * 64);
  int32_t sums[kDotRows][kGemmPanel];
  for (uint32_t n0 = 0; n0 < g.n; n0 += kGemmPanel) {
    const uint32_t valid = g.n - n0 < kGemmPanel ? g.n - n0 : kGemmPanel;
    pack_panel(g.col + n0, g.col_stride, g.k, panel.data());
    for (uint32_t m0 = 0; m0 < g.m; m0 += kDotRows) {
      const auto* w = reinterpret_cast<const int8_t*>(g.packed + packed_dot_words(m0, g.k));
      micro_kernel(w, panel.data(), quads, sums);
      const uint32_t rows = g.m - m0 < kDotRows ? g.m - m0 : kDotRows;
      for (uint32_t r = 0; r < rows; ++r) {
        const uint32_t i = m0 + r;
        requantize_row(sums[r], valid, g.q.bias[i], g.q.multiplier[i], g.q.shift[i], g.q.lo, g.q.hi,
                       g.out + i * g.out_stride + n0);
      }
    }
  }
}

}  // namespace

const EmuKernels* neon_dot_kernels() {
  static const EmuKernels* kernels = []() -> const EmuKernels* {
    const EmuKernels* neon = neon_kernels();
    if (neon == nullptr || (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) == 0) return nullptr;
    static EmuKernels k = *neon;
    k.id = "neon-dot";
    k.name = "NEON dot product";
    k.pack = &pack_weights_dot;
    k.packed_words = &packed_dot_words;
    k.gemm_rows = kDotRows;
    k.gemm = &gemm_neon_dot;
    return &k;
  }();
  return kernels;
}

}  // namespace tessera::emu

#else  // not aarch64

namespace tessera::emu {
const EmuKernels* neon_dot_kernels() { return nullptr; }
}  // namespace tessera::emu

#endif
