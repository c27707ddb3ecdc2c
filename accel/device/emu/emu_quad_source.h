// The quad sources' row builders of the implicit GEMM's per-image layout (emu_conv_implicit.cc),
// and the copy that packs it end to end for small maps (emu_conv_compact.cc).
#pragma once

#include <cstddef>
#include <cstdint>

#include "accel/device/emu/emu_conv_shape.h"

namespace tessera::emu {

// out[4 * j + b] = rows[b][j] ^ 0x80 for j < n; reads and writes nothing past n.
void interleave4(const int8_t* const rows[4], size_t n, uint8_t* out);

// One phase row of one input channel: dst[c] = input column c * stride_w + px - pad_left of
// `row` (zero outside the input) for c < width; dst is readable and zero up to width + 16.
void phase_row(const ConvShape& s, const int8_t* row, uint32_t px, uint32_t width, int8_t* dst);

// out[4 * j + b] = rows[b][stride * j] ^ 0x80 for j < n, stride 1 or 2, in 16-pixel steps on
// AVX-512 (the last step's loads and store masked: no byte of a row past rows[b][stride * (n - 1)]
// is read, none of out past 4 * n written). Called only where vnni512_kernels() is not null.
void interleave4_avx512(const int8_t* const rows[4], uint32_t stride, size_t n, uint8_t* out);

// Both column phases of a stride-2 phase row of 4 input channels at once (one load of the row
// for both): out0[4 * c + b] and out1[4 * c + b] = x + 128 for rows[b]'s columns first_col + 2c
// and first_col + 2c + 1, x = 0 outside [0, in_w) or where rows[b] is null, for c < width; on
// AVX-512, called only where vnni512_kernels() is not null. rows[b] + first_col may lie before
// the row: nothing outside [0, in_w) is read.
void interleave4_pair_avx512(const int8_t* const rows[4], int32_t first_col, uint32_t in_w, uint32_t width,
                             uint8_t* out0, uint8_t* out1);

// One row of quads: out[4 * c + b] = x + 128 for input channel 4 * quad + b of group input `in`
// (its channel 0), input row iy (any: outside the input is x = 0), column c * stride_w + px -
// pad_left, for c < width (channels past the group's are x = 0 too).
void quad_row(const ConvShape& s, const int8_t* in, uint32_t quad, int64_t iy, uint32_t px, uint32_t width,
              uint8_t* out);

// `rows` rows of `count` 4-byte pixels, pitch pixels apart at src, end to end into panels of
// kImplicitPanel pixels panel_stride bytes apart: pixel j of row r is pixel q = first + r *
// count + j, at dst + (q / kImplicitPanel) * panel_stride + 4 * (q % kImplicitPanel). On AVX-512
// (masked steps: nothing past a row's count read, nothing but those pixels written), called only
// where vnni512_kernels() is not null.
void gather_pixels_to_panels_avx512(const uint8_t* src, uint32_t pitch, uint32_t count, uint32_t rows, uint32_t first,
                                    size_t panel_stride, uint8_t* dst);

}  // namespace tessera::emu
