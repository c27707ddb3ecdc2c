// accel/plan/pool_fusion.h on the C simulation: a max-pool after a concat of two convs' slices,
// folded into the convs, writes the same bytes as the convs then the standalone pool (random
// tiles, partial ceil-mode windows, padding), and the pool stays standalone wherever folding
// could change what another layer or the program's output sees.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "accel/plan/pool_fusion.h"
#include "kernels/kernel_abi.h"
#include "tests/unit/kernels/kernel_csim_net_builder.h"
#include "tests/unit/kernels/kernel_csim_reference.h"

namespace tessera {
namespace {

using csim_test::ArenaTensor;
using csim_test::ConvSpec;
using csim_test::first_difference;
using csim_test::KernelRun;
using csim_test::NetBuilder;
using csim_test::randomise_tiles;
using csim_test::run_kernel;
using csim_test::tiles_of;

// in -> {1x1 conv, 3x3 pad 1 conv} -> concat (c1 + c2 channels) -> 3x3 stride 2 max-pool with
// `pad` and `ceil_rows` extra output rows/cols (a partial last window) -> pooled.
struct FireNet {
  ArenaTensor in, concat, pooled;
};

FireNet build_fire(NetBuilder& net, uint32_t size, uint32_t pad, uint32_t ceil_extra) {
  const uint32_t c_in = static_cast<uint32_t>(net.uniform(3, 40));
  const uint32_t c1 = static_cast<uint32_t>(net.uniform(1, 70)), c2 = static_cast<uint32_t>(net.uniform(1, 70));
  FireNet f;
  f.in = net.tensor(c_in, size, size);
  f.concat = net.tensor(c1 + c2, size, size);
  const uint32_t pooled = (size + 2 * pad - 3) / 2 + 1 + ceil_extra;
  f.pooled = net.tensor(c1 + c2, pooled, pooled);
  ConvSpec squeeze{c_in, size, size, c1};
  squeeze.act_lo = 0;
  net.conv(squeeze, f.in, 0, f.concat, 0);
  ConvSpec expand{c_in, size, size, c2, 3, 3};
  expand.pad_t = expand.pad_l = expand.pad_b = expand.pad_r = 1;
  net.conv(expand, f.in, 0, f.concat, c1);
  net.pool(abi::kPoolMax, c1 + c2, f.concat, 0, f.pooled, 0, 3, 3, 2, 2, pad, pad);
  net.finish(2);
  return f;
}

TEST(PoolFusion, FoldedPoolWritesTheSameBytesAsConvsThenPool) {
  struct Case {
    uint32_t size, pad, ceil_extra;
  };
  const std::vector<Case> cases = {{13, 0, 0}, {14, 0, 1}, {9, 1, 0}, {27, 0, 0}};
  uint32_t seed = 300;
  for (const Case& c : cases) {
    for (int trial = 0; trial < 3; ++trial) {
      NetBuilder net(++seed);
      const FireNet f = build_fire(net, c.size, c.pad, c.ceil_extra);
      const KernelRun separate = run_kernel(net);
      ASSERT_EQ(separate.status[0], abi::kRunOk);

      NetBuilder fused = net;
      std::vector<std::string> names = {"squeeze", "expand", "pool"};
      ASSERT_EQ(plan::fuse_pools_into_producers(fused.layers(), names, f.pooled.offset + 1), 1u);
      ASSERT_EQ(fused.layers().size(), 2u);
      EXPECT_EQ(names, (std::vector<std::string>{"squeeze", "expand"}));
      std::string tiles;
      for (size_t i = 0; i < 2; ++i) {
        ASSERT_EQ(fused.layers()[i].pool_kind, abi::kPoolMax);
        randomise_tiles(fused, i);  // the convs' tiles were for their unpooled outputs
        ASSERT_TRUE(abi::layer_fits(fused.layers()[i]));
        tiles += ' ';
        tiles += tiles_of(fused.layers()[i]);
      }
      const KernelRun folded = run_kernel(fused);
      ASSERT_EQ(folded.status[0], abi::kRunOk);
      // Every byte but the concat buffer's, which the folded program never writes.
      for (uint32_t n = 0; n < net.batch(); ++n) {
        const size_t image = static_cast<size_t>(n) * net.program().header.arena_image_bytes;
        const auto slice = [&](const KernelRun& r, const ArenaTensor& t) {
          const auto* b = r.arena.data() + image + t.offset;
          return std::vector<int8_t>(b, b + static_cast<size_t>(t.c) * t.h * t.w);
        };
        EXPECT_EQ(first_difference(slice(folded, f.pooled), slice(separate, f.pooled)), "")
            << "size " << c.size << " pad " << c.pad << " ceil " << c.ceil_extra << tiles;
        EXPECT_EQ(slice(folded, f.in), slice(separate, f.in));
      }
    }
  }
}

TEST(PoolFusion, PoolStaysWhereFoldingWouldChangeWhatSomeoneReads) {
  // The concat is the program's output.
  {
    NetBuilder net(401);
    const FireNet f = build_fire(net, 13, 0, 0);
    std::vector<std::string> names(3);
    EXPECT_EQ(plan::fuse_pools_into_producers(net.layers(), names, f.concat.offset), 0u);
    EXPECT_EQ(net.layers().size(), 3u);
  }
  // Another layer reads the concat too.
  {
    NetBuilder net(402);
    const FireNet f = build_fire(net, 13, 0, 0);
    const ArenaTensor other = net.tensor(f.concat.c, 6, 6);
    net.pool(abi::kPoolMax, f.concat.c, f.concat, 0, other, 0, 3, 3, 2, 2, 0, 0);
    std::vector<std::string> names(4);
    EXPECT_EQ(plan::fuse_pools_into_producers(net.layers(), names, f.pooled.offset), 0u);
  }
  // A producer that already has a fused pool, or is not a conv (an add writes half the concat).
  {
    NetBuilder net(403);
    const FireNet f = build_fire(net, 13, 0, 0);
    net.layers()[1].pool_kind = abi::kPoolMax;
    std::vector<std::string> names(3);
    EXPECT_EQ(plan::fuse_pools_into_producers(net.layers(), names, f.pooled.offset), 0u);
    net.layers()[1].pool_kind = abi::kPoolNone;
    net.layers()[1].op = abi::kOpAdd;
    EXPECT_EQ(plan::fuse_pools_into_producers(net.layers(), names, f.pooled.offset), 0u);
  }
  // The convs leave channels of the concat unwritten, or the pool reads only a slice.
  {
    NetBuilder net(404);
    const FireNet f = build_fire(net, 13, 0, 0);
    net.layers().erase(net.layers().begin());
    std::vector<std::string> names(2);
    EXPECT_EQ(plan::fuse_pools_into_producers(net.layers(), names, f.pooled.offset), 0u);
  }
  // A window the conv store half cannot pool (4x4 > kMaxPoolKernel).
  {
    NetBuilder net(405);
    const FireNet f = build_fire(net, 13, 0, 0);
    net.layers()[2].pool_h = net.layers()[2].pool_w = 4;
    std::vector<std::string> names(3);
    EXPECT_EQ(plan::fuse_pools_into_producers(net.layers(), names, f.pooled.offset), 0u);
  }
}

}  // namespace
}  // namespace tessera
