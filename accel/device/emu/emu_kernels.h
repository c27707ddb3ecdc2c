// The emulator's inner loops: an int8 GEMM with int32 accumulation fused with the ABI's
// per-channel requantisation, the direct conv's multiply-accumulate rows, a requantise-a-row
// helper, and the pool's and add's element loops. Each has a portable version
// (emu_kernels_scalar.cc), an AVX2 version (emu_conv_avx2.cc, x86), AVX-512 VNNI and AVX-VNNI
// GEMMs over the AVX2 element loops (emu_conv_vnni512.cc, emu_conv_avxvnni.cc, x86-64), a NEON
// version (emu_kernels_neon.cc, aarch64 and 32-bit ARM) and an Armv8.2 dot product (sdot) GEMM
// over the NEON element loops (emu_kernels_neon_dot.cc, aarch64); emu_kernels() picks one at run time
// (TESSERA_EMU_KERNELS forces one). All versions give identical bytes: the arithmetic is integer
// and the rounding is abi::requantize's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "accel/common/status.h"

namespace tessera::emu {

// Columns (output pixels) of one GEMM panel; im2col rows are zero-padded to a multiple of it.
constexpr uint32_t kGemmPanel = 16;
// Kernel taps of one input channel (mac_taps' limit).
constexpr uint32_t kMaxTaps = 11 * 11;
// Output channels of one AVX2 micro-kernel block (packed weight layout, see pack_weights).
constexpr uint32_t kGemmRows = 6;
// Output channels of one VNNI micro-kernel block (pack_weights_quads).
constexpr uint32_t kVnniRows = 6;
// (Virtual) pixels of one panel of the AVX-512 implicit GEMM (emu_conv_vnni512.cc): 4 vectors of 16.
constexpr uint32_t kImplicitPanel = 64;

// Requantisation of a block of output channels: channel i uses bias[i], multiplier[i], shift[i].
struct RequantParams {
  const int32_t* bias;
  const int32_t* multiplier;
  const int32_t* shift;
  int32_t lo, hi;
};

// out[i * out_stride + j] = requantize(sum_k w[i][k] * col[k][j] + bias[i]) for i < m, j < n.
// col holds round_up(k, 2) rows of col_stride bytes (an odd k's extra row is zero), each
// readable and zero beyond n up to round_up(n, kGemmPanel).
struct GemmArgs {
  const int8_t* weights;  // [m][k], the ABI's row-major layout of one group
  const int32_t* packed;  // the same weights in the kernels' pack() layout, or null
  uint32_t m, k;
  const int8_t* col;
  size_t col_stride;
  uint32_t n;
  RequantParams q;
  int8_t* out;
  size_t out_stride;
};

// The implicit GEMM of a conv (no im2col): the reduction runs over taps (ky, kx) and, within a
// tap, quads of 4 input channels, read straight from a quad source the conv code builds from the
// input rows (emu_conv_implicit.cc): byte b of pixel p of quad c for tap t is at
// source + tap_offset[t] + c * quad_stride + 4 * p, holding x[4c + b] + 128 (zero-padded input
// and channels past the group's read as x = 0). Pixels are virtual: p = y * width + x over rows
// of `width` columns, of which the first valid_w are outputs (the rest, the padding's columns,
// are computed and dropped). Output channel i's pixel (y, x) goes to out[i * out_stride + y *
// valid_w + x] after requantisation with q (channel i: q.bias[i] ...). `images` images (on small
// maps, so that each block of weights is read once for several) have their sources
// image_source_stride bytes apart and their outputs image_out_stride bytes apart.
// With compact_plane set (emu_conv_compact.cc: small maps, the images' output pixels end to end,
// images = 1), pixel p is pixel p % compact_plane of image p / compact_plane, whose output is
// image_out_stride bytes past the previous image's, and the source is panel-major: the
// kImplicitPanel pixels from P * kImplicitPanel at source + P * panel_stride, pixel p's quad at
// tap_offset[t] + c * quad_stride + 4 * (p % kImplicitPanel) from there. The kernel computes
// pixels [first_pixel, pixels), first_pixel a multiple of kImplicitPanel.
struct ImplicitArgs {
  const int32_t* packed;  // the m channels' weights in pack_tap_quads() layout (block-aligned start)
  uint32_t m;
  const uint8_t* source;
  const int32_t* tap_offset;
  uint32_t taps, quads_per_tap;  // quads = taps * quads_per_tap
  size_t quad_stride;
  uint32_t pixels, width, valid_w;
  RequantParams q;
  int8_t* out;
  size_t out_stride;
  uint32_t images;
  size_t image_source_stride, image_out_stride;
  uint32_t compact_plane, first_pixel;
  size_t panel_stride;
};

// Packs [m][channels][taps] int8 conv weights (one group) for the implicit GEMM: blocks of
// kVnniRows channels (the last shorter), within a block [taps][(channels + 3) / 4][rows] words
// holding w[r][4c .. 4c + 3][t] (zero past `channels`), then rows words of -128 * sum w[r]
// (mod 2^32), as pack_weights_quads. A block starting at channel c is at
// packed_quad_words(c, 4 * taps * ((channels + 3) / 4)).
void pack_tap_quads(const int8_t* weights, uint32_t m, uint32_t channels, uint32_t taps, int32_t* packed);

// Int32 words pack_weights() writes for an m x k weight matrix.
inline size_t packed_weight_words(uint32_t m, uint32_t k) { return static_cast<size_t>(m) * ((k + 1) / 2); }

// Packs [m][k] int8 weights as int16 pairs: blocks of kGemmRows channels (the last block
// shorter), within a block [k / 2][rows] words holding (w[r][2p], w[r][2p + 1]).
void pack_weights(const int8_t* weights, uint32_t m, uint32_t k, int32_t* packed);

// Int32 words pack_weights_quads() writes for an m x k weight matrix.
inline size_t packed_quad_words(uint32_t m, uint32_t k) { return static_cast<size_t>(m) * ((k + 3) / 4 + 1); }

// Packs [m][k] int8 weights for vpdpbusd (u8 x s8 sums of 4): blocks of kVnniRows channels (the
// last shorter), within a block [k / 4][rows] words holding w[r][4q .. 4q + 3] (zero past k),
// then rows words of -128 * sum_k w[r][k] (mod 2^32): the GEMM feeds activations as x + 128
// (unsigned), and adding this word back makes each sum exactly sum w * x modulo 2^32.
void pack_weights_quads(const int8_t* weights, uint32_t m, uint32_t k, int32_t* packed);

// The stem path's GEMM (emu_conv_stem.cc): an implicit GEMM (ImplicitArgs) with 3 quads per tap.
using StemGemmFn = void (*)(const ImplicitArgs& args);
// The AVX-512 VNNI one (emu_conv_stem_vnni512.cc), null off x86-64.
StemGemmFn stem_gemm_vnni512();

// One channel plane's max pool (kOpPool max and the fused pools): dst[oy][ox] = max of src over
// the window's in-range positions (-128 where none), src in_h x in_w, dst out_h x out_w.
struct MaxPoolArgs {
  const int8_t* src;
  uint32_t in_h, in_w;
  uint32_t h, w, stride_h, stride_w, pad_top, pad_left;
  int8_t* dst;
  uint32_t out_h, out_w;
};
// A version's max pool; false: it does not take this geometry (the portable loops run instead).
using MaxPoolFn = bool (*)(const MaxPoolArgs& args);
// The AVX-512 one (column strides 1 and 2; emu_pool_avx512.cc), null off x86-64.
MaxPoolFn max_pool_vnni512();

// The selected implementation's entry points.
struct EmuKernels {
  const char* id;    // TESSERA_EMU_KERNELS' value: "avx512-vnni" | "avx-vnni" | "avx2" | "neon-dot" | "neon" | "scalar"
  const char* name;  // for people (the device name): "AVX-512 VNNI", "AVX-VNNI", "AVX2", "NEON dot product", ...
  // The GEMM's weight layout: pack (null: gemm reads GemmArgs::weights) writes packed_words(m, k)
  // words; a block of gemm_rows channels starting at channel c (a multiple of gemm_rows) is at
  // packed_words(c, k).
  void (*pack)(const int8_t* weights, uint32_t m, uint32_t k, int32_t* packed);
  size_t (*packed_words)(uint32_t m, uint32_t k);
  uint32_t gemm_rows;
  void (*gemm)(const GemmArgs& args);
  // acc[j] += w * x[j] for j < n, modulo 2^32 (the direct conv path's stride-1 tap, and the
  // average pool's column sums with w = 1); w is an int8 weight (the SIMD versions use int16).
  void (*mac_row)(uint32_t* acc, const int8_t* x, int32_t w, uint32_t n);
  // acc[j] += sum over t < taps of w[t] * src[t][j], for j < n, modulo 2^32; taps <= kMaxTaps
  // (the direct path: all taps of one input channel over a plane's virtual rows, accumulators in registers).
  void (*mac_taps)(uint32_t* acc, const int8_t* const* src, const int32_t* w, uint32_t taps, uint32_t n);
  // out[j] = requantize(acc[j] + bias, multiplier, shift, lo, hi) for j < n (bias added in int32).
  void (*requantize_row)(const int32_t* acc, uint32_t n, int32_t bias, int32_t multiplier, int32_t shift, int32_t lo,
                         int32_t hi, int8_t* out);
  // acc[j] = max(acc[j], x[j]) for j < n (the max pool's pass down a window's rows).
  void (*max_row)(int8_t* acc, const int8_t* x, uint32_t n);
  // y[j] = abi::requantize_add(a[j], b[j], multiplier_a, multiplier_b, shift, lo, hi) for j < n.
  // y may be a or b (an in-place add): every element is read before it is written.
  void (*add_row)(const int8_t* a, const int8_t* b, uint32_t n, int32_t multiplier_a, int32_t multiplier_b,
                  int32_t shift, int32_t lo, int32_t hi, int8_t* y);
  // The implicit GEMM (ImplicitArgs), or null where the version has none: the conv then takes
  // im2col + gemm.
  void (*implicit_gemm)(const ImplicitArgs& args) = nullptr;
  // The stem path's GEMM, or null: 3-channel convs take the other paths.
  StemGemmFn stem_gemm = nullptr;
  // A whole plane's max pool (MaxPoolArgs), or null: max_pool_plane's row loops over max_row.
  MaxPoolFn max_pool = nullptr;
};

const EmuKernels& scalar_kernels();
// Null where the AVX2 version is not compiled in (non-x86 builds) or the CPU lacks AVX2.
const EmuKernels* avx2_kernels();
// Null where the version is not compiled in (non-x86-64 builds) or the CPU lacks AVX-512 VNNI
// (avx512f, bw, vl and vnni) or AVX-VNNI (avxvnni and avx2).
const EmuKernels* vnni512_kernels();
const EmuKernels* avxvnni_kernels();
// Null where the NEON version is not compiled in (non-ARM builds) or the CPU lacks NEON (32-bit
// ARM only: Debian's armhf baseline is VFPv3-D16 without NEON; aarch64 always has it).
const EmuKernels* neon_kernels();
// Null where the dot product GEMM is not compiled in (aarch64 only) or the CPU lacks the Armv8.2
// dot product (the kernel's HWCAP_ASIMDDP, "asimddp" in /proc/cpuinfo: Cortex-A53 has none).
const EmuKernels* neon_dot_kernels();

// One version of the loops as this build and CPU see it: kernels is null when it cannot run,
// and `missing` says why ("CPU lacks AVX-VNNI", "x86-64 only").
struct KernelPath {
  const char* id;
  const EmuKernels* kernels;
  std::string missing;
};
// Every version the emulator knows, fastest first (scalar last), available or not.
std::vector<KernelPath> kernel_paths();
// The version TESSERA_EMU_KERNELS names (TESSERA_EMU_SCALAR=1, its older form, means scalar), or
// the fastest this CPU has when it is unset; an unknown name, or one this CPU or build lacks, is
// an error that says which the CPU has.
Result<const EmuKernels*> select_kernels();
// select_kernels()' choice; where it failed, the fastest available (the device reports the
// error when it loads a program, and the registry when it opens the device).
const EmuKernels& emu_kernels();
// Every version this build and this CPU can run, scalar first (the tests check each one).
std::vector<const EmuKernels*> available_kernels();

// The portable element loops the AVX2 and NEON versions fall back on (their tails, and AVX2's
// add_row, where 64-bit lanes buy little).
void max_row_scalar(int8_t* acc, const int8_t* x, uint32_t n);
void add_row_scalar(const int8_t* a, const int8_t* b, uint32_t n, int32_t multiplier_a, int32_t multiplier_b,
                    int32_t shift, int32_t lo, int32_t hi, int8_t* y);

// Adds in int32 with two's-complement wrap, like the accelerator's int32 adder (no UB).
inline int32_t wrap_add(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}

}  // namespace tessera::emu
