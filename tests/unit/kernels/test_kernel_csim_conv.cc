// The HLS accelerator's C simulation (kernels/tessera_accel.cpp compiled by g++) on hand-sized
// convolutions against the naive int8 reference (kernel_csim_reference.h): every tiling of a 3x3
// conv, stride / dilation / asymmetric padding, groups, depthwise, fused max-pool. Compared over
// the whole arena, so a write outside a layer's output slice shows up too.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kernel_abi.h"
#include "tests/unit/kernels/kernel_csim_net_builder.h"
#include "tests/unit/kernels/kernel_csim_reference.h"

namespace tessera {
namespace {

using csim_test::ArenaTensor;
using csim_test::ConvSpec;
using csim_test::expect_matches_reference;
using csim_test::first_difference;
using csim_test::KernelRun;
using csim_test::LayerDesc;
using csim_test::NetBuilder;
using csim_test::randomise_tiles;
using csim_test::run_kernel;
using csim_test::run_reference;
using csim_test::tiles_of;

TEST(KernelCsim, Conv3x3MatchesReferenceForEveryTiling) {
  NetBuilder net(1);
  ConvSpec s;
  s.in_c = 3, s.in_h = 6, s.in_w = 6, s.out_c = 4, s.kh = 3, s.kw = 3, s.pad_t = s.pad_l = s.pad_b = s.pad_r = 1;
  const ArenaTensor in = net.tensor(3, 6, 6), out = net.tensor(4, s.out_h(), s.out_w());
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
  const ArenaTensor in = net.tensor(5, 13, 11), out = net.tensor(7, s.out_h(), s.out_w());
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
  const ArenaTensor in = net.tensor(3, 39, 35), out = net.tensor(6, s.out_h(), s.out_w());
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
  const ArenaTensor in = net.tensor(6, 7, 8), out = net.tensor(12, s.out_h(), s.out_w());
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
  const ArenaTensor in = net.tensor(8, 9, 9), out = net.tensor(8, s.out_h(), s.out_w());
  net.conv(s, in, 0, out, 0);
  net.finish(2);
  for (uint32_t tm : {1u, 3u, 8u}) {
    LayerDesc& d = net.layers()[0];
    d.tile_m = tm, d.tile_n = 1, d.tile_r = 2, d.tile_c = 4;
    expect_matches_reference(net, tiles_of(d));
  }
}

// The depthwise mode (lane per channel, shift-register window along the kernel row) under
// every shape it takes: kernel widths 1-7 (kernel_h apart), strides, vertical dilation, fused
// pool, 70 channels (a partial second lane tile), channel slices, whole-row and column tiles.
TEST(KernelCsim, DepthwiseModeMatchesReferenceAcrossShapesAndTiles) {
  struct Shape {
    uint32_t kh, kw, stride, dh;
    bool pool;
  };
  for (const Shape& sh : {Shape{3, 3, 1, 1, false}, Shape{3, 3, 2, 1, true}, Shape{5, 5, 1, 2, false},
                          Shape{1, 7, 2, 1, false}, Shape{7, 1, 1, 1, true}, Shape{3, 5, 3, 1, false}}) {
    NetBuilder net(sh.kh * 100 + sh.kw * 10 + sh.stride);
    ConvSpec s;
    s.in_c = s.out_c = s.groups = 70;
    s.in_h = 15, s.in_w = 17, s.kh = sh.kh, s.kw = sh.kw, s.sh = s.sw = sh.stride, s.dh = sh.dh;
    s.pad_t = s.pad_b = sh.dh * (sh.kh - 1) / 2, s.pad_l = s.pad_r = (sh.kw - 1) / 2;
    s.pool = sh.pool, s.ph = s.pw = 2, s.psh = s.psw = 2;
    ASSERT_TRUE(abi::schedule::depthwise_lanes(s.in_c, s.out_c, s.groups, s.dw));
    const ArenaTensor in = net.tensor(72, 15, 17), out = net.tensor(73, s.out_h(), s.out_w());
    net.conv(s, in, 1, out, 3);
    net.finish(2);
    for (uint32_t tm : {64u, 35u, 7u}) {
      for (uint32_t tc : {s.out_w(), 2u}) {
        LayerDesc& d = net.layers()[0];
        d.tile_m = tm, d.tile_n = 1, d.tile_r = 3, d.tile_c = tc;
        ASSERT_TRUE(abi::layer_fits(d)) << tiles_of(d);
        std::string what = "depthwise kernel ";
        what += std::to_string(sh.kh);
        what += 'x';
        what += std::to_string(sh.kw);
        what += ' ';
        what += tiles_of(d);
        expect_matches_reference(net, what);
      }
    }
  }
}

TEST(KernelCsim, FusedMaxPoolWithRelu) {
  NetBuilder net(6);
  ConvSpec s;
  s.in_c = 4, s.in_h = 12, s.in_w = 10, s.out_c = 5, s.kh = 3, s.kw = 3, s.pad_t = s.pad_l = s.pad_b = s.pad_r = 1;
  s.pool = true, s.ph = 2, s.pw = 2, s.psh = 2, s.psw = 2, s.act_lo = 0;
  const ArenaTensor in = net.tensor(4, 12, 10), out = net.tensor(5, s.out_h(), s.out_w());
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
  const ArenaTensor in = net.tensor(2, 8, 8), out = net.tensor(3, s.out_h(), s.out_w());
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

// Channel slices wider than the 64-element MAC vector (vector groups of 64 + a shorter last one),
// column tiles wider than 64, and the few-channel fold (a 3-channel 7x7/2 stem) against the
// reference (issue 14's kernel modes).
TEST(KernelCsim, VectorGroupsWideRowsAndFoldedFewChannelStem) {
  NetBuilder net(7);
  ConvSpec s;
  s.in_c = 150, s.in_h = 5, s.in_w = 70, s.out_c = 70, s.kh = 3, s.kw = 3, s.pad_t = s.pad_l = s.pad_b = s.pad_r = 1;
  ConvSpec stem;
  stem.in_c = 3, stem.in_h = 20, stem.in_w = 90, stem.out_c = 8, stem.kh = 7, stem.kw = 7, stem.sh = 2, stem.sw = 2;
  stem.pad_t = stem.pad_l = stem.pad_b = stem.pad_r = 3;
  const ArenaTensor in = net.tensor(150, 5, 70), out = net.tensor(70, s.out_h(), s.out_w());
  const ArenaTensor in2 = net.tensor(3, 20, 90), out2 = net.tensor(8, stem.out_h(), stem.out_w());
  net.conv(s, in, 0, out, 0);
  net.conv(stem, in2, 0, out2, 0);
  net.finish(1);
  const std::vector<int8_t> want = run_reference(net);
  int runs = 0;
  for (const auto& [tm, tn, tr, tc] :
       {std::array<uint32_t, 4>{64, 150, 2, 70}, {6, 65, 5, 70}, {64, 64, 1, 33}, {70, 100, 1, 70}, {3, 150, 3, 7}}) {
    LayerDesc& d = net.layers()[0];
    d.tile_m = tm, d.tile_n = tn, d.tile_r = tr, d.tile_c = tc;
    LayerDesc& e = net.layers()[1];
    e.tile_m = 8, e.tile_n = 3, e.tile_r = tr, e.tile_c = tc == 70 ? stem.out_w() : tc;
    if (!abi::layer_fits(d) || !abi::layer_fits(e)) continue;
    ASSERT_TRUE(abi::schedule::folds_kernel_width(e.groups, e.tile_n, e.kernel_w, e.dilation_w));
    const KernelRun run = run_kernel(net);
    ASSERT_EQ(run.status[0], abi::kRunOk) << tiles_of(d);
    const std::string diff = first_difference(run.arena, want);
    ASSERT_TRUE(diff.empty()) << tiles_of(d) << " / " << tiles_of(e) << ": " << diff;
    ++runs;
  }
  EXPECT_GE(runs, 3);  // 64x150 (weights) and 70 lanes do not fit: the others run
}

}  // namespace
}  // namespace tessera
