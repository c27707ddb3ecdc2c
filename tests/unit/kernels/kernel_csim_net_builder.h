// The C-simulation tests' program builder (test_kernel_csim_*.cc): int8 tensors in the arena,
// convolution specs, and a NetBuilder that emits layer descriptors with random weights, quant
// parameters and arena bytes.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "accel/program/program.h"
#include "kernels/kernel_abi.h"

namespace tessera::csim_test {

using abi::LayerDesc;

// A C x H x W int8 tensor at `offset` in every image's arena.
struct ArenaTensor {
  uint32_t offset = 0, c = 0, h = 0, w = 0;
};

// Shape of one convolution (+ optional fused max-pool); output sizes follow from the pads.
struct ConvSpec {
  uint32_t in_c = 1, in_h = 1, in_w = 1, out_c = 1;
  uint32_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  uint32_t pad_t = 0, pad_l = 0, pad_b = 0, pad_r = 0;
  uint32_t groups = 1;
  bool pool = false;
  uint32_t ph = 2, pw = 2, psh = 2, psw = 2, ppt = 0, ppl = 0, ppb = 0, ppr = 0;
  int32_t act_lo = -128, act_hi = 127;

  uint32_t conv_h() const { return (in_h + pad_t + pad_b - dh * (kh - 1) - 1) / sh + 1; }
  uint32_t conv_w() const { return (in_w + pad_l + pad_r - dw * (kw - 1) - 1) / sw + 1; }
  uint32_t out_h() const { return pool ? (conv_h() + ppt + ppb - ph) / psh + 1 : conv_h(); }
  uint32_t out_w() const { return pool ? (conv_w() + ppl + ppr - pw) / psw + 1 : conv_w(); }
};

// Builds a program (descriptors + random weights/quant) and random arena contents.
class NetBuilder {
 public:
  explicit NetBuilder(uint32_t seed) : rng_(seed) {}

  std::mt19937& rng() { return rng_; }
  std::vector<abi::LayerDesc>& layers() { return program_.layers; }

  // Reserves a tensor in every image's arena (64-byte aligned, kArenaAlignBytes).
  ArenaTensor tensor(uint32_t c, uint32_t h, uint32_t w) {
    ArenaTensor t{arena_bytes_, c, h, w};
    arena_bytes_ = align(arena_bytes_ + c * h * w, abi::kArenaAlignBytes);
    return t;
  }

  // Conv reading channels [in_base, +s.in_c) of `in`, writing [out_base, +s.out_c) of `out`.
  LayerDesc& conv(const ConvSpec& s, const ArenaTensor& in, uint32_t in_base, const ArenaTensor& out,
                  uint32_t out_base) {
    LayerDesc d{};
    d.op = abi::kOpConv;
    set_io(d, s.in_c, in, in_base, s.out_c, out, out_base);
    d.conv_h = s.conv_h();
    d.conv_w = s.conv_w();
    d.kernel_h = s.kh;
    d.kernel_w = s.kw;
    d.stride_h = s.sh;
    d.stride_w = s.sw;
    d.pad_top = s.pad_t;
    d.pad_left = s.pad_l;
    d.dilation_h = s.dh;
    d.dilation_w = s.dw;
    d.groups = s.groups;
    d.act_lo = s.act_lo;
    d.act_hi = s.act_hi;
    if (s.pool) {
      d.pool_kind = abi::kPoolMax;
      d.pool_h = s.ph;
      d.pool_w = s.pw;
      d.pool_stride_h = s.psh;
      d.pool_stride_w = s.psw;
      d.pool_pad_top = s.ppt;
      d.pool_pad_left = s.ppl;
    }
    EXPECT_EQ(d.out_h, s.out_h());
    EXPECT_EQ(d.out_w, s.out_w());
    // Weights [out_c][in_c / groups][kh][kw].
    d.weight_offset = static_cast<uint32_t>(program_.weights.size());
    const uint32_t count = s.out_c * (s.in_c / s.groups) * s.kh * s.kw;
    for (uint32_t i = 0; i < count; ++i) program_.weights.push_back(static_cast<int8_t>(uniform(-128, 127)));
    program_.weights.resize(align(static_cast<uint32_t>(program_.weights.size()), abi::kParamAlignBytes), 0);
    // bias[out_c], multiplier[out_c], shift[out_c]; the shift keeps outputs mostly unclamped.
    d.quant_offset = static_cast<uint32_t>(program_.quant.size());
    // NOLINTNEXTLINE(bugprone-integer-division): input channels per group are whole
    const double terms = static_cast<double>((s.in_c / s.groups) * s.kh * s.kw);
    const int32_t base_shift = 15 + static_cast<int32_t>(std::lround(std::log2(std::sqrt(terms) * 86.0)));
    for (uint32_t i = 0; i < s.out_c; ++i) program_.quant.push_back(uniform(-3000, 3000));
    for (uint32_t i = 0; i < s.out_c; ++i) program_.quant.push_back(uniform(1 << 14, (1 << 16) - 1));
    for (uint32_t i = 0; i < s.out_c; ++i) program_.quant.push_back(base_shift + uniform(-2, 1));
    default_tiles(d);
    program_.layers.push_back(d);
    return program_.layers.back();
  }

  // Standalone pool over all channels of `in` into `out` (same channel count, given slices).
  LayerDesc& pool(uint32_t kind, uint32_t c, const ArenaTensor& in, uint32_t in_base, const ArenaTensor& out,
                  uint32_t out_base, uint32_t ph, uint32_t pw, uint32_t psh, uint32_t psw, uint32_t ppt, uint32_t ppl) {
    LayerDesc d{};
    d.op = abi::kOpPool;
    set_io(d, c, in, in_base, c, out, out_base);
    d.pool_kind = kind;
    d.pool_h = ph;
    d.pool_w = pw;
    d.pool_stride_h = psh;
    d.pool_stride_w = psw;
    d.pool_pad_top = ppt;
    d.pool_pad_left = ppl;
    d.act_lo = -128;
    d.act_hi = 127;
    d.quant_offset = static_cast<uint32_t>(program_.quant.size());
    if (kind == abi::kPoolAverage) {
      // Constant window count ph x pw: multiplier = round(2^20 / count), shift 20.
      program_.quant.push_back(static_cast<int32_t>(std::lround(std::ldexp(1.0, 20) / (ph * pw))));
      program_.quant.push_back(20);
    }
    default_tiles(d);
    program_.layers.push_back(d);
    return program_.layers.back();
  }

  // y = requantize_add(a, b, ...) on c channels of three tensors of one shape.
  LayerDesc& add(uint32_t c, const ArenaTensor& a, uint32_t a_base, const ArenaTensor& b, uint32_t b_base,
                 const ArenaTensor& y, uint32_t y_base) {
    LayerDesc d{};
    d.op = abi::kOpAdd;
    set_io(d, c, a, a_base, c, y, y_base);
    d.in2_offset = b.offset;
    d.in2_channel_base = b_base;
    d.in2_channels_total = b.c;
    d.act_lo = uniform(0, 1) == 0 ? -128 : 0;
    d.act_hi = 127;
    d.quant_offset = static_cast<uint32_t>(program_.quant.size());
    program_.quant.push_back(uniform(1 << 13, 1 << 15));
    program_.quant.push_back(uniform(1 << 13, 1 << 15));
    program_.quant.push_back(15 + uniform(0, 1));
    default_tiles(d);
    program_.layers.push_back(d);
    return program_.layers.back();
  }

  // Random arena bytes for `batch` images (every tensor, so stray writes are visible).
  void finish(uint32_t batch) {
    batch_ = batch;
    program_.header.arena_image_bytes = std::max<uint32_t>(arena_bytes_, abi::kArenaAlignBytes);
    arena_.resize(static_cast<size_t>(batch) * program_.header.arena_image_bytes);
    for (auto& b : arena_) b = static_cast<int8_t>(uniform(-128, 127));
    if (program_.weights.empty()) program_.weights.assign(abi::kParamAlignBytes, 0);
    if (program_.quant.empty()) program_.quant.assign(16, 0);
  }

  const CompiledProgram& program() const { return program_; }
  CompiledProgram& mutable_program() { return program_; }
  const std::vector<int8_t>& arena() const { return arena_; }
  std::vector<int8_t>& mutable_arena() { return arena_; }
  uint32_t batch() const { return batch_; }

  int32_t uniform(int32_t lo, int32_t hi) { return std::uniform_int_distribution<int32_t>(lo, hi)(rng_); }

 private:
  static uint32_t align(uint32_t v, uint32_t a) { return (v + a - 1) / a * a; }

  static void set_io(LayerDesc& d, uint32_t in_c, const ArenaTensor& in, uint32_t in_base, uint32_t out_c,
                     const ArenaTensor& out, uint32_t out_base) {
    d.in_c = in_c;
    d.in_h = in.h;
    d.in_w = in.w;
    d.in_offset = in.offset;
    d.in_channel_base = in_base;
    d.in_channels_total = in.c;
    d.out_c = out_c;
    d.out_h = out.h;
    d.out_w = out.w;
    d.out_offset = out.offset;
    d.out_channel_base = out_base;
    d.out_channels_total = out.c;
  }

  // Whole-layer tiles where they fit the limits; tests override them.
  static void default_tiles(LayerDesc& d) {
    d.tile_m = std::min<uint32_t>(d.out_c, abi::kMaxTileM);
    d.tile_n = d.op == abi::kOpConv ? std::min<uint32_t>(d.in_c / d.groups, abi::kMaxTileN) : 1;
    d.tile_r = std::min<uint32_t>(d.out_h, abi::kMaxTileR);
    d.tile_c = std::min<uint32_t>(d.out_w, abi::kMaxTileC);
  }

  std::mt19937 rng_;
  CompiledProgram program_;
  std::vector<int8_t> arena_;
  uint32_t arena_bytes_ = 0;
  uint32_t batch_ = 1;
};

}  // namespace tessera::csim_test
