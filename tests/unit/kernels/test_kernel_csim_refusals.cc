// The HLS accelerator's C simulation refusing what it cannot run: a bad program header runs
// nothing; a tile larger than the synthesised buffers is a bad layer, reported with its index.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/kernel_abi.h"
#include "tests/unit/kernels/kernel_csim_net_builder.h"
#include "tests/unit/kernels/kernel_csim_reference.h"

namespace tessera {
namespace {

using csim_test::ArenaTensor;
using csim_test::ConvSpec;
using csim_test::KernelRun;
using csim_test::LayerDesc;
using csim_test::NetBuilder;
using csim_test::run_kernel;
using csim_test::run_words;

TEST(KernelCsim, BadProgramHeaderIsRefused) {
  NetBuilder net(13);
  const ArenaTensor in = net.tensor(2, 4, 4), out = net.tensor(2, 2, 2);
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
  const ArenaTensor in = net.tensor(3, 300, 300), out = net.tensor(4, s.out_h(), s.out_w());
  const ArenaTensor pooled = net.tensor(4, 1, 1);
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

// Input stationary needs every input channel of an ungrouped conv in one tile; pools and adds
// have one order. Anything else is a bad layer, not a silently different loop.
TEST(KernelCsim, InputStationaryOutsideItsConditionsIsBadLayer) {
  NetBuilder net(15);
  ConvSpec s;
  s.in_c = 8, s.in_h = 6, s.in_w = 6, s.out_c = 8, s.kh = 3, s.kw = 3, s.pad_t = s.pad_b = s.pad_l = s.pad_r = 1;
  const ArenaTensor in = net.tensor(8, 6, 6), out = net.tensor(8, 6, 6), pooled = net.tensor(8, 3, 3);
  net.conv(s, in, 0, out, 0);
  net.pool(abi::kPoolMax, 8, out, 0, pooled, 0, 2, 2, 2, 2, 0, 0);
  net.finish(1);
  LayerDesc& conv = net.layers()[0];
  conv.tile_m = 4, conv.tile_n = 8, conv.tile_r = 2, conv.tile_c = 6;
  conv.loop_order = abi::kLoopInputStationary;
  ASSERT_EQ(run_kernel(net).status[0], abi::kRunOk);

  conv.tile_n = 4;  // two input-channel slices: no single stationary input tile
  KernelRun run = run_kernel(net);
  EXPECT_EQ(run.status[0], abi::kRunBadLayer);
  EXPECT_EQ(run.status[1], 0u);
  conv.tile_n = 8;
  conv.loop_order = 2;  // no such order
  EXPECT_EQ(run_kernel(net).status[0], abi::kRunBadLayer);
  conv.loop_order = abi::kLoopOutputStationary;
  net.layers()[1].loop_order = abi::kLoopInputStationary;  // a pool
  run = run_kernel(net);
  EXPECT_EQ(run.status[0], abi::kRunBadLayer);
  EXPECT_EQ(run.status[1], 1u);
}

}  // namespace
}  // namespace tessera
