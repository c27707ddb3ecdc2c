// The fp32 conv through oneDNN (accel/host/onednn, where the build has it) against the portable
// im2col + GEMM conv, within float rounding: the shapes of the zoo's layers (ResNet's 7x7 stride-2
// stem on 3 channels, 3x3 pad 1, 1x1 stride 1 and 2, MobileNetV2's depthwise, grouped), dilation,
// asymmetric pads, no bias, ragged channel counts that oneDNN's blocked formats pad, batch 1 and 3,
// on 1 and 2 threads; and concurrent callers of one cached primitive. Skipped, with the reason, in
// a build without oneDNN.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <ostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "accel/host/reference_ops.h"
#if TESSERA_HAVE_ONEDNN
#include "accel/graph/op_shapes.h"
#include "accel/host/onednn/onednn_conv.h"
#endif

namespace tessera::host {
namespace {

struct OnednnConvCase {
  std::string name;
  Shape x, w;
  int stride, pad, dilation, group;
  bool bias;
  std::array<int, 4> pads{-1, -1, -1, -1};  // explicit pads (top, left, bottom, right) when >= 0
};

void PrintTo(const OnednnConvCase& c, std::ostream* os) { *os << c.name; }

class OnednnConvTest : public ::testing::TestWithParam<OnednnConvCase> {};

TEST_P(OnednnConvTest, MatchesThePortableConvWithinFloatRounding) {
#if TESSERA_HAVE_ONEDNN
  const OnednnConvCase& c = GetParam();
  std::mt19937 rng(std::hash<std::string>{}(c.name) & 0xffffu);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  auto random = [&](Shape s) {
    Tensor t(std::move(s));
    for (float& v : t.data) v = dist(rng);
    return t;
  };
  const Tensor x = random(c.x), w = random(c.w), b = random({c.w[0]});
  ConvAttrs attrs;
  attrs.kernel = {static_cast<int>(c.w[2]), static_cast<int>(c.w[3])};
  attrs.stride = {c.stride, c.stride};
  attrs.dilation = {c.dilation, c.dilation};
  attrs.pads = c.pads[0] >= 0 ? c.pads : std::array<int, 4>{c.pad, c.pad, c.pad, c.pad};
  attrs.group = c.group;
  const Tensor* bias = c.bias ? &b : nullptr;
  auto want = conv2d_portable(x, w, bias, attrs);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  auto shape = conv_output_shape(x.shape, w.shape, bias ? &bias->shape : nullptr, attrs);
  ASSERT_TRUE(shape.is_ok());
  // Each output is a sum of k = C/group * kH * kW products of values in [-1, 1): its float
  // rounding in either order is far below 1e-5 * k.
  const float tol = 1e-5f * static_cast<float>(c.w[1] * c.w[2] * c.w[3]);
  for (int wanted : {1, 2}) {
    const HostThreads threads(wanted);
    auto got = onednn_conv2d(x, w, bias, attrs, *shape, threads);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    ASSERT_EQ(got->shape, want->shape);
    float worst = 0.0f;
    for (size_t i = 0; i < want->data.size(); ++i) worst = std::max(worst, std::fabs(got->data[i] - want->data[i]));
    EXPECT_LE(worst, tol) << threads.count() << " threads";
  }
#else
  GTEST_SKIP() << "built without oneDNN (cmake/find_onednn.cmake: TESSERA_HAVE_ONEDNN is off)";
#endif
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, OnednnConvTest,
    ::testing::Values(OnednnConvCase{"Stem7x7Stride2", {1, 3, 37, 41}, {16, 3, 7, 7}, 2, 3, 1, 1, true},
                      OnednnConvCase{"Conv3x3Pad1Batch3", {3, 32, 14, 14}, {32, 32, 3, 3}, 1, 1, 1, 1, true},
                      OnednnConvCase{"Conv3x3Stride2Ragged", {1, 19, 15, 13}, {21, 19, 3, 3}, 2, 1, 1, 1, true},
                      OnednnConvCase{"Pointwise", {2, 64, 9, 9}, {48, 64, 1, 1}, 1, 0, 1, 1, true},
                      OnednnConvCase{"PointwiseStride2NoBias", {1, 40, 10, 11}, {24, 40, 1, 1}, 2, 0, 1, 1, false},
                      OnednnConvCase{"Depthwise3x3Stride2", {1, 32, 17, 17}, {32, 1, 3, 3}, 2, 1, 1, 32, true},
                      OnednnConvCase{"Depthwise3x3Batch3", {3, 24, 8, 8}, {24, 1, 3, 3}, 1, 1, 1, 24, false},
                      OnednnConvCase{"Grouped", {1, 16, 12, 12}, {24, 4, 3, 3}, 1, 1, 1, 4, true},
                      OnednnConvCase{"Dilated", {1, 8, 16, 16}, {8, 8, 3, 3}, 1, 2, 2, 1, true},
                      OnednnConvCase{"AsymmetricPads", {1, 5, 9, 10}, {7, 5, 3, 2}, 1, 0, 1, 1, true, {0, 1, 2, 0}}),
    [](const ::testing::TestParamInfo<OnednnConvCase>& param) { return param.param.name; });

// Engines' callers and the batch split's halves run the same layer at once: the cached
// primitives (one per geometry, shared) must give each caller its own working memory. Four threads
// x 50 runs of two shapes whose oneDNN convs use a scratchpad, each the bits of a lone run.
TEST(OnednnConv, ConcurrentCallersShareCachedPrimitives) {
#if TESSERA_HAVE_ONEDNN
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  auto random = [&](Shape shape) {
    Tensor t(std::move(shape));
    for (float& v : t.data) v = dist(rng);
    return t;
  };
  ConvAttrs attrs;
  attrs.kernel = {3, 3};
  attrs.pads = {1, 1, 1, 1};
  const Tensor xs[2] = {random({1, 64, 14, 14}), random({2, 32, 9, 9})};
  const Tensor ws[2] = {random({64, 64, 3, 3}), random({48, 32, 3, 3})};
  std::vector<Tensor> want;
  for (int i = 0; i < 2; ++i) {
    const HostThreads one(1);
    auto shape = conv_output_shape(xs[i].shape, ws[i].shape, nullptr, attrs);
    ASSERT_TRUE(shape.is_ok());
    auto y = onednn_conv2d(xs[i], ws[i], nullptr, attrs, *shape, one);
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    want.push_back(std::move(y).value());
  }
  std::atomic<int> mismatches{0};
  std::vector<std::thread> callers;
  callers.reserve(4);
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&, t] {
      const HostThreads one(1);
      for (int run = 0; run < 50; ++run) {
        const int i = (t + run) % 2;
        auto y = onednn_conv2d(xs[i], ws[i], nullptr, attrs, want[i].shape, one);
        if (!y.is_ok() || y->data != want[i].data) ++mismatches;
      }
    });
  }
  for (auto& c : callers) c.join();
  EXPECT_EQ(mismatches.load(), 0);
#else
  GTEST_SKIP() << "built without oneDNN (cmake/find_onednn.cmake: TESSERA_HAVE_ONEDNN is off)";
#endif
}

}  // namespace
}  // namespace tessera::host
