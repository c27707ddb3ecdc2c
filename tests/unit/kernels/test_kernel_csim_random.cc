// The HLS accelerator's C simulation on random layers — convolutions with any kernel, stride,
// dilation, groups, padding and fused pool; pools and adds — each under random tilings, against
// the naive int8 reference (kernel_csim_reference.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernel_abi.h"
#include "tests/unit/kernels/kernel_csim_net_builder.h"
#include "tests/unit/kernels/kernel_csim_reference.h"

namespace tessera {
namespace {

using csim_test::ArenaTensor;
using csim_test::ConvSpec;
using csim_test::first_difference;
using csim_test::KernelRun;
using csim_test::LayerDesc;
using csim_test::NetBuilder;
using csim_test::randomise_tiles;
using csim_test::run_kernel;
using csim_test::run_reference;
using csim_test::tiles_of;

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
    const ArenaTensor in = net.tensor(s.in_c + in_extra, s.in_h, s.in_w);
    const ArenaTensor out = net.tensor(s.out_c + out_extra, s.out_h(), s.out_w());
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
    const ArenaTensor in = net.tensor(c + 1, h, w), pooled = net.tensor(c, oh, ow);
    const ArenaTensor other = net.tensor(c + 1, oh, ow), sum = net.tensor(c + 2, oh, ow);
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

}  // namespace
}  // namespace tessera
