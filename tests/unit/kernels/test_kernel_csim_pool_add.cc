// The HLS accelerator's C simulation on hand-sized standalone pools (max with padding, empty
// windows, global and windowed average), adds on channel slices, and a concat made of channel
// slices over a batch, against the naive int8 reference (kernel_csim_reference.h).
#include <gtest/gtest.h>

#include <algorithm>
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

TEST(KernelCsim, StandaloneMaxPoolWithPadding) {
  NetBuilder net(8);
  const ArenaTensor in = net.tensor(6, 9, 9), out = net.tensor(4, 5, 5);
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
  const ArenaTensor in = net.tensor(1, 2, 2), out = net.tensor(1, 3, 3);
  net.pool(abi::kPoolMax, 1, in, 0, out, 0, 2, 2, 2, 2, 1, 1);
  net.finish(1);
  const KernelRun run = run_kernel(net);
  ASSERT_EQ(run.status[0], abi::kRunOk);
  EXPECT_EQ(first_difference(run.arena, run_reference(net)), "");
  EXPECT_EQ(run.arena[out.offset + 8], -128);
}

TEST(KernelCsim, AveragePoolGlobalAndWindowed) {
  NetBuilder net(10);
  const ArenaTensor in = net.tensor(5, 7, 7), global = net.tensor(5, 1, 1), windowed = net.tensor(5, 3, 3);
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
  const ArenaTensor a = net.tensor(10, 6, 7), b = net.tensor(6, 6, 7), y = net.tensor(9, 6, 7);
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
  const ArenaTensor input = net.tensor(3, 8, 8), cat = net.tensor(10, 8, 8);
  const ArenaTensor head = net.tensor(5, s3.out_h(), s3.out_w()), pooled = net.tensor(5, 1, 1);
  net.conv(s1, input, 0, cat, 0);
  net.conv(s2, input, 0, cat, 4);
  net.conv(s3, cat, 2, head, 0);  // reads channels [2, 8): both producers
  net.pool(abi::kPoolAverage, 5, head, 0, pooled, 0, head.h, head.w, 1, 1, 0, 0);
  net.finish(3);
  expect_matches_reference(net, "whole-layer tiles");
  for (int i = 0; i < 4; ++i) {
    for (size_t l = 0; l < net.layers().size(); ++l) randomise_tiles(net, l);
    // Appended, not `"..." + std::to_string(i)`: GCC 12's -Wrestrict misfires on that insert() in
    // the 32-bit armhf build (a known GCC 12 false positive, cf. GCC bug 105651), which -Werror stops.
    std::string what = "random tiles ";
    what += std::to_string(i);
    expect_matches_reference(net, what);
  }
}

}  // namespace
}  // namespace tessera
