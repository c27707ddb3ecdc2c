// The GEMM path of kOpConv: im2col of a block of output rows into int8 rows
// [in_channel, ky, kx][pixel] (the weights' own k order), then one GEMM per block of output
// channels with requantisation fused into the store.
#include <cstring>
#include <vector>

#include "accel/device/emu/emu_conv_shape.h"

namespace tessera::emu {
namespace {

// Fills col[k][stride] for rows [row_begin, row_end) of one group; pixel j = (oy - row_begin) *
// conv_w + ox. Out-of-range input reads as zero (padding); the tail up to `stride` and the
// extra row of an odd k are zero, as GemmArgs asks.
void build_columns(const ConvShape& s, const int8_t* in, uint32_t row_begin, uint32_t row_end, int8_t* col,
                   size_t stride) {
  const size_t n = static_cast<size_t>(row_end - row_begin) * s.conv_w;
  int8_t* dst = col;
  for (uint32_t ic = 0; ic < s.in_per_group; ++ic) {
    const int8_t* plane = in + ic * s.in_plane;
    for (uint32_t ky = 0; ky < s.kernel_h; ++ky) {
      for (uint32_t kx = 0; kx < s.kernel_w; ++kx, dst += stride) {
        const uint32_t begin = s.ox_begin[kx], end = s.ox_end[kx];
        const int32_t col_offset = static_cast<int32_t>(kx * s.dilation_w) - s.pad_left;
        int8_t* out = dst;
        for (uint32_t oy = row_begin; oy < row_end; ++oy, out += s.conv_w) {
          const int32_t iy = static_cast<int32_t>(oy * s.stride_h + ky * s.dilation_h) - s.pad_top;
          if (iy < 0 || iy >= static_cast<int32_t>(s.in_h) || begin == end) {
            std::memset(out, 0, s.conv_w);
            continue;
          }
          std::memset(out, 0, begin);
          std::memset(out + end, 0, s.conv_w - end);
          const int8_t* row = plane + static_cast<size_t>(iy) * s.in_w;
          if (s.stride_w == 1) {
            std::memcpy(out + begin, row + (static_cast<int32_t>(begin) + col_offset), end - begin);
          } else {
            for (uint32_t ox = begin; ox < end; ++ox) {
              out[ox] = row[static_cast<int32_t>(ox * s.stride_w) + col_offset];
            }
          }
        }
        std::memset(dst + n, 0, stride - n);
      }
    }
  }
  if (s.k % 2 != 0) std::memset(dst, 0, stride);
}

}  // namespace

void conv_gemm_block(const LayerRun& run, const ConvShape& s, uint32_t n, uint32_t g, uint32_t row_begin,
                     uint32_t row_end, uint32_t oc_begin, uint32_t oc_end) {
  const size_t pixels = static_cast<size_t>(row_end - row_begin) * s.conv_w;
  const size_t stride = (pixels + kGemmPanel - 1) / kGemmPanel * kGemmPanel;
  thread_local std::vector<int8_t> col;
  const size_t rows = s.k + (s.k % 2);
  if (col.size() < rows * stride) col.resize(rows * stride);
  build_columns(s, conv_input(run, s, n, g), row_begin, row_end, col.data(), stride);

  const uint32_t first = g * s.out_per_group + oc_begin;  // first output channel of the block
  GemmArgs args{};
  args.weights = run.weights + run.d.weight_offset + static_cast<size_t>(first) * s.k;
  args.packed = run.packed == nullptr
                    ? nullptr
                    : run.packed + g * run.kernels.packed_words(s.out_per_group, s.k) +
                          run.kernels.packed_words(oc_begin, s.k);
  args.m = oc_end - oc_begin;
  args.k = s.k;
  args.col = col.data();
  args.col_stride = stride;
  args.n = static_cast<uint32_t>(pixels);
  args.q = conv_requant(run, first);
  args.out = conv_output(run, s, n, first) + static_cast<size_t>(row_begin) * s.conv_w;
  args.out_stride = s.conv_plane;
  run.kernels.gemm(args);
}

}  // namespace tessera::emu
