// The HLS accelerator's C simulation (kernels/tessera_accel.cpp compiled by g++) against a naive
// int8 reference written here with plain loops: convolution with groups / stride / dilation /
// padding, fused max-pool, standalone max / average pool, add, channel slices (concat), batches.
// Every layer is run under several tilings, which must all give the reference's bytes — over the
// whole arena, so a write outside a layer's output slice shows up too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "accel/program/program.h"
#include "kernels/kernel_abi.h"
#include "kernels/tessera_accel.h"

namespace tessera {
namespace {

using abi::LayerDesc;

// A C x H x W int8 tensor at `offset` in every image's arena.
struct Tensor {
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
  Tensor tensor(uint32_t c, uint32_t h, uint32_t w) {
    Tensor t{arena_bytes_, c, h, w};
    arena_bytes_ = align(arena_bytes_ + c * h * w, abi::kArenaAlignBytes);
    return t;
  }

  // Conv reading channels [in_base, +s.in_c) of `in`, writing [out_base, +s.out_c) of `out`.
  LayerDesc& conv(const ConvSpec& s, const Tensor& in, uint32_t in_base, const Tensor& out, uint32_t out_base) {
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
  LayerDesc& pool(uint32_t kind, uint32_t c, const Tensor& in, uint32_t in_base, const Tensor& out, uint32_t out_base,
                  uint32_t ph, uint32_t pw, uint32_t psh, uint32_t psw, uint32_t ppt, uint32_t ppl) {
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
  LayerDesc& add(uint32_t c, const Tensor& a, uint32_t a_base, const Tensor& b, uint32_t b_base, const Tensor& y,
                 uint32_t y_base) {
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

  static void set_io(LayerDesc& d, uint32_t in_c, const Tensor& in, uint32_t in_base, uint32_t out_c, const Tensor& out,
                     uint32_t out_base) {
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

// ---- The naive reference -----------------------------------------------------------------------

int8_t read_at(const int8_t* img, uint32_t offset, uint32_t chan, uint32_t h, uint32_t w, uint32_t y, uint32_t x) {
  return img[offset + (static_cast<size_t>(chan) * h + y) * w + x];
}

void ref_conv(const LayerDesc& d, const std::vector<int8_t>& weights, const std::vector<int32_t>& quant, int8_t* img) {
  const uint32_t opg = d.out_c / d.groups, ipg = d.in_c / d.groups;
  std::vector<int32_t> conv(static_cast<size_t>(d.out_c) * d.conv_h * d.conv_w);
  for (uint32_t oc = 0; oc < d.out_c; ++oc) {
    const uint32_t g = oc / opg;
    const int32_t bias = quant[d.quant_offset + oc];
    const int32_t mult = quant[d.quant_offset + d.out_c + oc];
    const int32_t shift = quant[d.quant_offset + 2 * d.out_c + oc];
    for (uint32_t y = 0; y < d.conv_h; ++y) {
      for (uint32_t x = 0; x < d.conv_w; ++x) {
        int64_t sum = bias;
        for (uint32_t icl = 0; icl < ipg; ++icl) {
          for (uint32_t ky = 0; ky < d.kernel_h; ++ky) {
            for (uint32_t kx = 0; kx < d.kernel_w; ++kx) {
              const int64_t iy = int64_t{y} * d.stride_h + int64_t{ky} * d.dilation_h - d.pad_top;
              const int64_t ix = int64_t{x} * d.stride_w + int64_t{kx} * d.dilation_w - d.pad_left;
              if (iy < 0 || iy >= d.in_h || ix < 0 || ix >= d.in_w) continue;  // zero padding
              const int8_t a = read_at(img, d.in_offset, d.in_channel_base + g * ipg + icl, d.in_h, d.in_w,
                                       static_cast<uint32_t>(iy), static_cast<uint32_t>(ix));
              const int8_t w = weights[d.weight_offset + ((oc * ipg + icl) * d.kernel_h + ky) * d.kernel_w + kx];
              sum += int64_t{a} * w;
            }
          }
        }
        const auto acc = static_cast<int32_t>(static_cast<uint32_t>(sum));  // int32, wrapping
        conv[(static_cast<size_t>(oc) * d.conv_h + y) * d.conv_w + x] =
            abi::requantize(acc, mult, shift, d.act_lo, d.act_hi);
      }
    }
  }
  for (uint32_t oc = 0; oc < d.out_c; ++oc) {
    for (uint32_t y = 0; y < d.out_h; ++y) {
      for (uint32_t x = 0; x < d.out_w; ++x) {
        int32_t v;
        if (d.pool_kind == abi::kPoolMax) {
          v = -128;  // padded positions never win; an empty window stays at -128
          for (uint32_t wy = 0; wy < d.pool_h; ++wy) {
            for (uint32_t wx = 0; wx < d.pool_w; ++wx) {
              const int64_t cy = int64_t{y} * d.pool_stride_h + wy - d.pool_pad_top;
              const int64_t cx = int64_t{x} * d.pool_stride_w + wx - d.pool_pad_left;
              if (cy < 0 || cy >= d.conv_h || cx < 0 || cx >= d.conv_w) continue;
              v = std::max(v, conv[(static_cast<size_t>(oc) * d.conv_h + cy) * d.conv_w + cx]);
            }
          }
        } else {
          v = conv[(static_cast<size_t>(oc) * d.conv_h + y) * d.conv_w + x];
        }
        img[d.out_offset + (static_cast<size_t>(d.out_channel_base + oc) * d.out_h + y) * d.out_w + x] =
            static_cast<int8_t>(v);
      }
    }
  }
}

void ref_pool(const LayerDesc& d, const std::vector<int32_t>& quant, int8_t* img) {
  for (uint32_t c = 0; c < d.out_c; ++c) {
    for (uint32_t y = 0; y < d.out_h; ++y) {
      for (uint32_t x = 0; x < d.out_w; ++x) {
        int32_t max = -128, sum = 0;
        for (uint32_t wy = 0; wy < d.pool_h; ++wy) {
          for (uint32_t wx = 0; wx < d.pool_w; ++wx) {
            const int64_t iy = int64_t{y} * d.pool_stride_h + wy - d.pool_pad_top;
            const int64_t ix = int64_t{x} * d.pool_stride_w + wx - d.pool_pad_left;
            if (iy < 0 || iy >= d.in_h || ix < 0 || ix >= d.in_w) continue;
            const int32_t v = read_at(img, d.in_offset, d.in_channel_base + c, d.in_h, d.in_w,
                                      static_cast<uint32_t>(iy), static_cast<uint32_t>(ix));
            max = std::max(max, v);
            sum += v;
          }
        }
        const int32_t out =
            d.pool_kind == abi::kPoolMax
                ? max
                : abi::requantize(sum, quant[d.quant_offset], quant[d.quant_offset + 1], d.act_lo, d.act_hi);
        img[d.out_offset + (static_cast<size_t>(d.out_channel_base + c) * d.out_h + y) * d.out_w + x] =
            static_cast<int8_t>(out);
      }
    }
  }
}

void ref_add(const LayerDesc& d, const std::vector<int32_t>& quant, int8_t* img) {
  const uint32_t plane = d.out_h * d.out_w;
  for (uint32_t c = 0; c < d.out_c; ++c) {
    for (uint32_t p = 0; p < plane; ++p) {
      const int8_t a = img[d.in_offset + (d.in_channel_base + c) * plane + p];
      const int8_t b = img[d.in2_offset + (d.in2_channel_base + c) * plane + p];
      img[d.out_offset + (d.out_channel_base + c) * plane + p] = static_cast<int8_t>(abi::requantize_add(
          a, b, quant[d.quant_offset], quant[d.quant_offset + 1], quant[d.quant_offset + 2], d.act_lo, d.act_hi));
    }
  }
}

std::vector<int8_t> run_reference(const NetBuilder& net) {
  const CompiledProgram& p = net.program();
  std::vector<int8_t> arena = net.arena();
  for (uint32_t n = 0; n < net.batch(); ++n) {
    int8_t* img = arena.data() + static_cast<size_t>(n) * p.header.arena_image_bytes;
    for (const LayerDesc& d : p.layers) {
      if (d.op == abi::kOpConv) ref_conv(d, p.weights, p.quant, img);
      if (d.op == abi::kOpPool) ref_pool(d, p.quant, img);
      if (d.op == abi::kOpAdd) ref_add(d, p.quant, img);
    }
  }
  return arena;
}

// ---- Running the C simulation ------------------------------------------------------------------

struct KernelRun {
  std::vector<int8_t> arena;
  uint32_t status[abi::kStatusWords] = {0xdeadu, 0xdeadu};
};

KernelRun run_words(const NetBuilder& net, const std::vector<uint32_t>& words) {
  KernelRun run;
  run.arena = net.arena();
  tessera_accel(words.data(), net.program().weights.data(), net.program().quant.data(), run.arena.data(), run.status);
  return run;
}

KernelRun run_kernel(const NetBuilder& net) { return run_words(net, net.program().program_words(net.batch())); }

// "" when equal, else where the first difference is.
std::string first_difference(const std::vector<int8_t>& got, const std::vector<int8_t>& want) {
  if (got.size() != want.size()) return "sizes differ";
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i]) {
      std::ostringstream os;
      os << "byte " << i << ": kernel " << int{got[i]} << ", reference " << int{want[i]};
      return os.str();
    }
  }
  return "";
}

std::string tiles_of(const LayerDesc& d) {
  std::ostringstream os;
  os << "tiles m" << d.tile_m << " n" << d.tile_n << " r" << d.tile_r << " c" << d.tile_c;
  return os.str();
}

// Runs the kernel on the net as built and checks it against the reference, bit for bit.
void expect_matches_reference(const NetBuilder& net, const std::string& what) {
  const KernelRun run = run_kernel(net);
  ASSERT_EQ(run.status[0], abi::kRunOk) << what << " (layer " << run.status[1] << ")";
  const std::string diff = first_difference(run.arena, run_reference(net));
  EXPECT_TRUE(diff.empty()) << what << ": " << diff;
}

// Random tile choice for layer `index` that layer_fits() accepts.
void randomise_tiles(NetBuilder& net, size_t index) {
  LayerDesc& d = net.layers()[index];
  for (int attempt = 0; attempt < 1000; ++attempt) {
    LayerDesc t = d;
    t.tile_m = static_cast<uint32_t>(net.uniform(1, static_cast<int32_t>(std::min<uint32_t>(d.out_c, abi::kMaxTileM))));
    if (d.op == abi::kOpConv) {
      const uint32_t opg = d.out_c / d.groups;
      if (net.uniform(0, 2) == 0 && opg <= abi::kMaxTileM) t.tile_m = opg * static_cast<uint32_t>(net.uniform(1, 4));
      t.tile_n = static_cast<uint32_t>(net.uniform(1, static_cast<int32_t>(d.in_c / d.groups)));
    }
    t.tile_r = static_cast<uint32_t>(net.uniform(1, static_cast<int32_t>(std::min<uint32_t>(d.out_h + 2, 64))));
    t.tile_c = static_cast<uint32_t>(net.uniform(1, static_cast<int32_t>(std::min<uint32_t>(d.out_w + 2, 64))));
    if (abi::layer_fits(t)) {
      d = t;
      return;
    }
  }
  FAIL() << "no fitting tiles found for layer " << index;
}

// ---- Hand-sized layers -------------------------------------------------------------------------

TEST(KernelCsim, Conv3x3MatchesReferenceForEveryTiling) {
  NetBuilder net(1);
  ConvSpec s;
  s.in_c = 3, s.in_h = 6, s.in_w = 6, s.out_c = 4, s.kh = 3, s.kw = 3, s.pad_t = s.pad_l = s.pad_b = s.pad_r = 1;
  const Tensor in = net.tensor(3, 6, 6), out = net.tensor(4, s.out_h(), s.out_w());
  net.conv(s, in, 0, out, 0);
  net.finish(1);
  const std::vector<int8_t> want = run_reference(net);
  int tilings = 0;
  for (uint32_t tm : {1u, 2u, 4u}) {
    for (uint32_t tn : {1u, 2u, 3u}) {
      for (uint32_t tr : {1u, 2u, 4u, 6u, 64u}) {
        for (uint32_t tc : {1u, 3u, 6u}) {
          LayerDesc& d = net.layers()[0];
          d.tile_m = tm, d.tile_n = tn, d.tile_r = tr, d.tile_c = tc;
          ASSERT_TRUE(abi::layer_fits(d)) << tiles_of(d);
          const KernelRun run = run_kernel(net);
          ASSERT_EQ(run.status[0], abi::kRunOk);
          const std::string diff = first_difference(run.arena, want);
          ASSERT_TRUE(diff.empty()) << tiles_of(d) << ": " << diff;
          ++tilings;
        }
      }
    }
  }
  EXPECT_EQ(tilings, 135);
}

TEST(KernelCsim, StridedDilatedConvWithAsymmetricPadding) {
  NetBuilder net(2);
  ConvSpec s;
  s.in_c = 5, s.in_h = 13, s.in_w = 11, s.out_c = 7, s.kh = 3, s.kw = 2, s.sh = 2, s.sw = 3, s.dh = 2, s.dw = 1;
  s.pad_t = 2, s.pad_b = 0, s.pad_l = 0, s.pad_r = 1;
  const Tensor in = net.tensor(5, 13, 11), out = net.tensor(7, s.out_h(), s.out_w());
  net.conv(s, in, 0, out, 0);
  net.finish(1);
  expect_matches_reference(net, "whole-layer tiles");
  for (int i = 0; i < 6; ++i) {
    randomise_tiles(net, 0);
    expect_matches_reference(net, tiles_of(net.layers()[0]));
  }
}

TEST(KernelCsim, LargeKernelStride4Conv) {
  // AlexNet conv1-like: 11x11, stride 4, on a small image.
  NetBuilder net(3);
  ConvSpec s;
  s.in_c = 3, s.in_h = 39, s.in_w = 35, s.out_c = 6, s.kh = 11, s.kw = 11, s.sh = 4, s.sw = 4, s.pad_t = 2;
  s.pad_l = 2, s.pad_b = 2, s.pad_r = 2;
  const Tensor in = net.tensor(3, 39, 35), out = net.tensor(6, s.out_h(), s.out_w());
  net.conv(s, in, 0, out, 0);
  net.finish(1);
  expect_matches_reference(net, "whole-layer tiles");
  LayerDesc& d = net.layers()[0];
  d.tile_m = 3, d.tile_n = 2, d.tile_r = 3, d.tile_c = 5;
  expect_matches_reference(net, tiles_of(d));
}

TEST(KernelCsim, GroupedConvTilesInsideAndAcrossGroups) {
  NetBuilder net(4);
  ConvSpec s;
  s.in_c = 6, s.in_h = 7, s.in_w = 8, s.out_c = 12, s.kh = 3, s.kw = 3, s.groups = 3;
  s.pad_t = s.pad_l = s.pad_b = s.pad_r = 1;
  const Tensor in = net.tensor(6, 7, 8), out = net.tensor(12, s.out_h(), s.out_w());
  net.conv(s, in, 0, out, 0);
  net.finish(1);
  // out_per_group 4, in_per_group 2: tile_m 1, 2 lie inside a group; 4, 8, 12 cover whole groups
  // (8 leaves a partial last tile of one group).
  for (uint32_t tm : {1u, 2u, 4u, 8u, 12u}) {
    for (uint32_t tn : {1u, 2u}) {
      LayerDesc& d = net.layers()[0];
      d.tile_m = tm, d.tile_n = tn, d.tile_r = 3, d.tile_c = 5;
      ASSERT_TRUE(abi::layer_fits(d)) << tiles_of(d);
      expect_matches_reference(net, tiles_of(d));
    }
  }
  LayerDesc bad = net.layers()[0];
  bad.tile_m = 3;  // neither inside one group nor whole groups
  EXPECT_FALSE(abi::layer_fits(bad));
}

TEST(KernelCsim, DepthwiseConvWithStride) {
  NetBuilder net(5);
  ConvSpec s;
  s.in_c = 8, s.in_h = 9, s.in_w = 9, s.out_c = 8, s.kh = 3, s.kw = 3, s.sh = 2, s.sw = 2, s.groups = 8;
  s.pad_t = s.pad_l = s.pad_b = s.pad_r = 1, s.act_lo = 0, s.act_hi = 96;  // ReLU6-style clip
  const Tensor in = net.tensor(8, 9, 9), out = net.tensor(8, s.out_h(), s.out_w());
  net.conv(s, in, 0, out, 0);
  net.finish(2);
  for (uint32_t tm : {1u, 3u, 8u}) {
    LayerDesc& d = net.layers()[0];
    d.tile_m = tm, d.tile_n = 1, d.tile_r = 2, d.tile_c = 4;
    expect_matches_reference(net, tiles_of(d));
  }
}

TEST(KernelCsim, FusedMaxPoolWithRelu) {
  NetBuilder net(6);
  ConvSpec s;
  s.in_c = 4, s.in_h = 12, s.in_w = 10, s.out_c = 5, s.kh = 3, s.kw = 3, s.pad_t = s.pad_l = s.pad_b = s.pad_r = 1;
  s.pool = true, s.ph = 2, s.pw = 2, s.psh = 2, s.psw = 2, s.act_lo = 0;
  const Tensor in = net.tensor(4, 12, 10), out = net.tensor(5, s.out_h(), s.out_w());
  ASSERT_EQ(out.h, 6u);
  ASSERT_EQ(out.w, 5u);
  net.conv(s, in, 0, out, 0);
  net.finish(1);
  expect_matches_reference(net, "whole-layer tiles");
  for (int i = 0; i < 6; ++i) {
    randomise_tiles(net, 0);
    expect_matches_reference(net, tiles_of(net.layers()[0]));
  }
}

TEST(KernelCsim, FusedMaxPoolPaddingNeverWins) {
  // ResNet stem pool (3x3, stride 2, pad 1) over conv outputs that are all negative: a padded
  // position counted as 0 would win every border window.
  NetBuilder net(7);
  ConvSpec s;
  s.in_c = 2, s.in_h = 8, s.in_w = 8, s.out_c = 3, s.kh = 1, s.kw = 1;
  s.pool = true, s.ph = 3, s.pw = 3, s.psh = 2, s.psw = 2, s.ppt = s.ppl = s.ppb = s.ppr = 1;
  const Tensor in = net.tensor(2, 8, 8), out = net.tensor(3, s.out_h(), s.out_w());
  LayerDesc& d = net.conv(s, in, 0, out, 0);
  std::vector<int8_t>& weights = net.mutable_program().weights;
  std::vector<int32_t>& quant = net.mutable_program().quant;
  for (uint32_t i = 0; i < 6; ++i) weights[d.weight_offset + i] = static_cast<int8_t>(net.uniform(-3, 3));
  for (uint32_t oc = 0; oc < 3; ++oc) {
    quant[d.quant_offset + oc] = -200000;      // bias: everything far below zero
    quant[d.quant_offset + 3 + oc] = 1 << 20;  // M
    quant[d.quant_offset + 6 + oc] = 32;       // S: y ~ acc / 4096, about -49
  }
  net.finish(1);
  d.tile_r = 2, d.tile_c = 3;
  const KernelRun run = run_kernel(net);
  ASSERT_EQ(run.status[0], abi::kRunOk);
  EXPECT_EQ(first_difference(run.arena, run_reference(net)), "");
  for (uint32_t i = 0; i < 3 * out.h * out.w; ++i) EXPECT_LT(run.arena[out.offset + i], 0) << "output " << i;
}

TEST(KernelCsim, StandaloneMaxPoolWithPadding) {
  NetBuilder net(8);
  const Tensor in = net.tensor(6, 9, 9), out = net.tensor(4, 5, 5);
  // Channels [1, 5) of a 6-channel tensor: 3x3 stride 2 pad 1 (9 -> 5).
  net.pool(abi::kPoolMax, 4, in, 1, out, 0, 3, 3, 2, 2, 1, 1);
  net.finish(2);
  for (auto& b : net.mutable_arena()) b = static_cast<int8_t>(-1 - (b & 0x7f));  // < 0
  expect_matches_reference(net, "whole-layer tiles");
  LayerDesc& d = net.layers()[0];
  d.tile_m = 3, d.tile_r = 2, d.tile_c = 2;
  expect_matches_reference(net, tiles_of(d));
}

TEST(KernelCsim, EmptyMaxWindowGivesMinus128) {
  // A 2x2 input with one output row/column too many: the last windows see only padding.
  NetBuilder net(9);
  const Tensor in = net.tensor(1, 2, 2), out = net.tensor(1, 3, 3);
  net.pool(abi::kPoolMax, 1, in, 0, out, 0, 2, 2, 2, 2, 1, 1);
  net.finish(1);
  const KernelRun run = run_kernel(net);
  ASSERT_EQ(run.status[0], abi::kRunOk);
  EXPECT_EQ(first_difference(run.arena, run_reference(net)), "");
  EXPECT_EQ(run.arena[out.offset + 8], -128);
}

TEST(KernelCsim, AveragePoolGlobalAndWindowed) {
  NetBuilder net(10);
  const Tensor in = net.tensor(5, 7, 7), global = net.tensor(5, 1, 1), windowed = net.tensor(5, 3, 3);
  net.pool(abi::kPoolAverage, 5, in, 0, global, 0, 7, 7, 1, 1, 0, 0);    // 7x7 global average
  net.pool(abi::kPoolAverage, 5, in, 0, windowed, 0, 3, 3, 2, 2, 0, 0);  // 3x3 stride 2, no padding
  net.finish(2);
  expect_matches_reference(net, "whole-layer tiles");
  // The average of a constant plane is that constant.
  auto& arena = net.mutable_arena();
  std::fill(arena.begin() + in.offset, arena.begin() + in.offset + 49, int8_t{-37});
  const KernelRun run = run_kernel(net);
  EXPECT_EQ(run.arena[global.offset], -37);
}

TEST(KernelCsim, AddWithChannelSlices) {
  NetBuilder net(11);
  const Tensor a = net.tensor(10, 6, 7), b = net.tensor(6, 6, 7), y = net.tensor(9, 6, 7);
  net.add(4, a, 3, b, 2, y, 5);
  net.add(4, y, 5, a, 0, y, 5);  // in place: y = y + a
  net.finish(2);
  expect_matches_reference(net, "whole-layer tiles");
  net.layers()[0].tile_r = 1, net.layers()[0].tile_c = 5;  // chunks of 5 bytes
  net.layers()[1].tile_r = 4, net.layers()[1].tile_c = 3;
  expect_matches_reference(net, "small chunks");
}

TEST(KernelCsim, ConcatThroughChannelSlicesOverABatch) {
  // Two convs write the halves of one tensor (a free Concat); the next layers read slices of it.
  NetBuilder net(12);
  ConvSpec s1;
  s1.in_c = 3, s1.in_h = 8, s1.in_w = 8, s1.out_c = 4, s1.kh = 3, s1.kw = 3;
  s1.pad_t = s1.pad_l = s1.pad_b = s1.pad_r = 1;
  ConvSpec s2 = s1;
  s2.out_c = 6, s2.kh = s2.kw = 1, s2.pad_t = s2.pad_l = s2.pad_b = s2.pad_r = 0;
  ConvSpec s3 = s1;
  s3.in_c = 6, s3.out_c = 5, s3.sh = s3.sw = 2, s3.pool = true, s3.ph = s3.pw = 2, s3.psh = s3.psw = 1;
  const Tensor input = net.tensor(3, 8, 8), cat = net.tensor(10, 8, 8);
  const Tensor head = net.tensor(5, s3.out_h(), s3.out_w()), pooled = net.tensor(5, 1, 1);
  net.conv(s1, input, 0, cat, 0);
  net.conv(s2, input, 0, cat, 4);
  net.conv(s3, cat, 2, head, 0);  // reads channels [2, 8): both producers
  net.pool(abi::kPoolAverage, 5, head, 0, pooled, 0, head.h, head.w, 1, 1, 0, 0);
  net.finish(3);
  expect_matches_reference(net, "whole-layer tiles");
  for (int i = 0; i < 4; ++i) {
    for (size_t l = 0; l < net.layers().size(); ++l) randomise_tiles(net, l);
    expect_matches_reference(net, "random tiles " + std::to_string(i));
  }
}

// ---- Random layers -----------------------------------------------------------------------------

// A random conv layer (reading and writing channel slices of larger tensors) under random tilings.
TEST(KernelCsim, RandomConvLayersMatchReferenceUnderAnyTiling) {
  std::mt19937 seeds(20240611);
  for (int trial = 0; trial < 40; ++trial) {
    NetBuilder net(seeds());
    ConvSpec s;
    static const uint32_t kKernels[] = {1, 2, 3, 5, 7};
    s.kh = kKernels[net.uniform(0, 4)];
    s.kw = net.uniform(0, 2) == 0 ? s.kh : kKernels[net.uniform(0, 4)];
    s.sh = static_cast<uint32_t>(net.uniform(1, 3));
    s.sw = static_cast<uint32_t>(net.uniform(1, 3));
    s.dh = s.kh > 1 && net.uniform(0, 3) == 0 ? 2 : 1;
    s.dw = s.kw > 1 && net.uniform(0, 3) == 0 ? 2 : 1;
    s.groups = static_cast<uint32_t>(net.uniform(0, 2) == 0 ? net.uniform(2, 4) : 1);
    s.in_c = s.groups * static_cast<uint32_t>(net.uniform(1, 5));
    s.out_c = net.uniform(0, 4) == 0 && s.groups > 1 ? s.in_c : s.groups * static_cast<uint32_t>(net.uniform(1, 5));
    s.pad_t = static_cast<uint32_t>(net.uniform(0, static_cast<int32_t>(s.kh - 1)));
    s.pad_b = static_cast<uint32_t>(net.uniform(0, static_cast<int32_t>(s.kh - 1)));
    s.pad_l = static_cast<uint32_t>(net.uniform(0, static_cast<int32_t>(s.kw - 1)));
    s.pad_r = static_cast<uint32_t>(net.uniform(0, static_cast<int32_t>(s.kw - 1)));
    s.in_h = s.dh * (s.kh - 1) + static_cast<uint32_t>(net.uniform(1, 14));
    s.in_w = s.dw * (s.kw - 1) + static_cast<uint32_t>(net.uniform(1, 14));
    if (net.uniform(0, 2) == 0 && s.conv_h() >= 2 && s.conv_w() >= 2) {
      s.pool = true;
      s.ph = s.pw = static_cast<uint32_t>(net.uniform(2, 3));
      s.psh = s.psw = static_cast<uint32_t>(net.uniform(1, 2));
      s.ppt = s.ppb = s.ph == 3 ? static_cast<uint32_t>(net.uniform(0, 1)) : 0;
      s.ppl = s.ppr = s.ppt;
      if (s.conv_h() + 2 * s.ppt < s.ph || s.conv_w() + 2 * s.ppl < s.pw) s.pool = false;
    }
    s.act_lo = net.uniform(0, 1) == 0 ? -128 : 0;
    const uint32_t in_extra = static_cast<uint32_t>(net.uniform(0, 3)),
                   out_extra = static_cast<uint32_t>(net.uniform(0, 3));
    const Tensor in = net.tensor(s.in_c + in_extra, s.in_h, s.in_w);
    const Tensor out = net.tensor(s.out_c + out_extra, s.out_h(), s.out_w());
    net.conv(s, in, static_cast<uint32_t>(net.uniform(0, static_cast<int32_t>(in_extra))), out,
             static_cast<uint32_t>(net.uniform(0, static_cast<int32_t>(out_extra))));
    net.finish(static_cast<uint32_t>(net.uniform(1, 2)));
    const std::vector<int8_t> want = run_reference(net);
    for (int tiling = 0; tiling < 3; ++tiling) {
      randomise_tiles(net, 0);
      const LayerDesc& d = net.layers()[0];
      const KernelRun run = run_kernel(net);
      ASSERT_EQ(run.status[0], abi::kRunOk);
      const std::string diff = first_difference(run.arena, want);
      ASSERT_TRUE(diff.empty()) << "trial " << trial << " k" << d.kernel_h << "x" << d.kernel_w << " s" << d.stride_h
                                << "x" << d.stride_w << " d" << d.dilation_h << "x" << d.dilation_w << " g" << d.groups
                                << " in" << d.in_c << " out" << d.out_c << " pool" << d.pool_kind << " " << tiles_of(d)
                                << ": " << diff;
    }
  }
}

TEST(KernelCsim, RandomPoolAndAddLayersMatchReference) {
  std::mt19937 seeds(7);
  for (int trial = 0; trial < 20; ++trial) {
    NetBuilder net(seeds());
    const uint32_t c = static_cast<uint32_t>(net.uniform(1, 6));
    const uint32_t h = static_cast<uint32_t>(net.uniform(1, 20)), w = static_cast<uint32_t>(net.uniform(1, 20));
    const uint32_t ph = std::min<uint32_t>(h, static_cast<uint32_t>(net.uniform(1, 16)));
    const uint32_t pw = std::min<uint32_t>(w, static_cast<uint32_t>(net.uniform(1, 16)));
    const uint32_t psh = static_cast<uint32_t>(net.uniform(1, 5)), psw = static_cast<uint32_t>(net.uniform(1, 5));
    const bool average = net.uniform(0, 1) == 0;
    const uint32_t ppt = average ? 0 : static_cast<uint32_t>(net.uniform(0, static_cast<int32_t>(ph - 1)));
    const uint32_t ppl = average ? 0 : static_cast<uint32_t>(net.uniform(0, static_cast<int32_t>(pw - 1)));
    const uint32_t oh = (h + 2 * ppt - ph) / psh + 1, ow = (w + 2 * ppl - pw) / psw + 1;
    const Tensor in = net.tensor(c + 1, h, w), pooled = net.tensor(c, oh, ow);
    const Tensor other = net.tensor(c + 1, oh, ow), sum = net.tensor(c + 2, oh, ow);
    net.pool(average ? abi::kPoolAverage : abi::kPoolMax, c, in, 1, pooled, 0, ph, pw, psh, psw, ppt, ppl);
    net.add(c, pooled, 0, other, 1, sum, 2);
    net.finish(static_cast<uint32_t>(net.uniform(1, 3)));
    const std::vector<int8_t> want = run_reference(net);
    for (int tiling = 0; tiling < 3; ++tiling) {
      randomise_tiles(net, 0);
      randomise_tiles(net, 1);
      const KernelRun run = run_kernel(net);
      ASSERT_EQ(run.status[0], abi::kRunOk);
      const std::string diff = first_difference(run.arena, want);
      ASSERT_TRUE(diff.empty()) << "trial " << trial << (average ? " average " : " max ") << ph << "x" << pw << " s"
                                << psh << "x" << psw << " p" << ppt << "," << ppl << ": " << diff;
    }
  }
}

// ---- Refusals ----------------------------------------------------------------------------------

TEST(KernelCsim, BadProgramHeaderIsRefused) {
  NetBuilder net(13);
  const Tensor in = net.tensor(2, 4, 4), out = net.tensor(2, 2, 2);
  net.pool(abi::kPoolMax, 2, in, 0, out, 0, 2, 2, 2, 2, 0, 0);
  net.finish(1);
  const std::vector<uint32_t> good = net.program().program_words(1);
  for (int field = 0; field < 3; ++field) {
    std::vector<uint32_t> words = good;
    if (field == 0) words[0] = 0x30525354u;  // "TSR0"
    if (field == 1) words[1] = abi::kAbiVersion + 1;
    if (field == 2) words[2] = abi::kMaxLayers + 1;
    const KernelRun run = run_words(net, words);
    EXPECT_EQ(run.status[0], abi::kRunBadProgram) << "header word " << field;
    EXPECT_EQ(run.status[1], 0u);
    EXPECT_EQ(run.arena, net.arena()) << "nothing may run";
  }
  EXPECT_EQ(run_words(net, good).status[0], abi::kRunOk);
}

TEST(KernelCsim, OversizedTileIsBadLayerWithItsIndex) {
  NetBuilder net(14);
  ConvSpec s;
  s.in_c = 3, s.in_h = 300, s.in_w = 300, s.out_c = 4, s.kh = 11, s.kw = 11, s.sh = 4, s.sw = 4;
  const Tensor in = net.tensor(3, 300, 300), out = net.tensor(4, s.out_h(), s.out_w());
  const Tensor pooled = net.tensor(4, 1, 1);
  net.conv(s, in, 0, out, 0);
  net.pool(abi::kPoolAverage, 4, out, 0, pooled, 0, 16, 16, 16, 16, 0, 0);
  net.pool(abi::kPoolMax, 4, out, 0, pooled, 0, 2, 2, 2, 2, 0, 0);
  net.finish(1);
  net.layers()[0].tile_r = net.layers()[0].tile_c = 16;
  ASSERT_EQ(run_kernel(net).status[0], abi::kRunOk);

  net.layers()[2].tile_m = abi::kMaxTileM + 1;  // more lanes than synthesised
  KernelRun run = run_kernel(net);
  EXPECT_EQ(run.status[0], abi::kRunBadLayer);
  EXPECT_EQ(run.status[1], 2u);

  net.layers()[0].tile_r = net.layers()[0].tile_c = 64;  // input tile 263 x 263 > 256 x 256
  run = run_kernel(net);
  EXPECT_EQ(run.status[0], abi::kRunBadLayer);
  EXPECT_EQ(run.status[1], 0u);
}

}  // namespace
}  // namespace tessera
