// The fp32 host path's faster forms against the plain ones: max pooling (row passes, split across
// threads) against the naive window loops, NaN included; a Relu/Clip fused into a conv (oneDNN's
// post-op or the portable GEMM's rows) or an add against the separate pass; oneDNN's weights kept
// in a per-model cache (host::ModelCache) against reordering per call; and the executor fusing
// Relu/Clip where the graph allows and nowhere else.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "accel/host/model_cache.h"
#include "accel/host/reference_executor.h"
#include "accel/host/reference_ops.h"
#include "tests/unit/accel/host/reference_ops_test_support.h"

namespace tessera::host {
namespace {

using reference_test::expect_same;
using reference_test::pool;
using reference_test::random_tensor;

// Max pooling as the definition says: every window element, padding never wins, NaN propagates.
Tensor naive_max_pool(const Tensor& x, const PoolAttrs& a, const Shape& out) {
  Tensor y(out);
  const int64_t h = x.dim(2), w = x.dim(3);
  for (int64_t p = 0; p < x.dim(0) * x.dim(1); ++p) {
    for (int64_t oh = 0; oh < out[2]; ++oh) {
      for (int64_t ow = 0; ow < out[3]; ++ow) {
        float m = -std::numeric_limits<float>::infinity();
        bool nan = false;
        for (int i = 0; i < a.kernel[0]; ++i) {
          for (int j = 0; j < a.kernel[1]; ++j) {
            const int64_t ih = oh * a.stride[0] - a.pads[0] + i, iw = ow * a.stride[1] - a.pads[1] + j;
            if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
            const float v = x.data[static_cast<size_t>((p * h + ih) * w + iw)];
            nan = nan || std::isnan(v);
            m = std::max(m, v);
          }
        }
        y.data[static_cast<size_t>((p * out[2] + oh) * out[3] + ow)] = nan ? NAN : m;
      }
    }
  }
  return y;
}

TEST(FusedHostOps, MaxPoolMatchesTheNaiveWindowsNaNIncluded) {
  std::mt19937 rng(11);
  struct Case {
    Shape x;
    PoolAttrs attrs;
  };
  PoolAttrs wide = pool(3, 2, 1);
  wide.kernel = {2, 3};
  wide.pads = {0, 1, 1, 0};
  const std::vector<Case> cases = {
      {{1, 3, 9, 9}, pool(3, 1, 1)},         {{2, 4, 10, 7}, pool(3, 2, 0, true)}, {{1, 2, 8, 8}, pool(2, 2, 0)},
      {{1, 2, 7, 11}, pool(3, 2, 1)},        {{1, 1, 5, 5}, pool(1, 1, 0)},        {{1, 2, 6, 9}, wide},
      {{1, 128, 56, 56}, pool(3, 1, 1)},  // big enough to be split across threads
      {{1, 3, 13, 13}, pool(3, 2, 0, true)},
  };
  for (const Case& c : cases) {
    Tensor x = random_tensor(c.x, rng);
    x.data[3] = NAN;
    x.data[x.data.size() / 2] = NAN;
    auto got = max_pool2d(x, c.attrs);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    const Tensor want = naive_max_pool(x, c.attrs, got->shape);
    ASSERT_EQ(got->data.size(), want.data.size());
    for (size_t i = 0; i < want.data.size(); ++i) {
      if (std::isnan(want.data[i])) {
        ASSERT_TRUE(std::isnan(got->data[i])) << shape_to_string(c.x) << " at " << i;
      } else {
        ASSERT_EQ(got->data[i], want.data[i]) << shape_to_string(c.x) << " at " << i;
      }
    }
  }
}

ConvAttrs conv3x3(int stride, int group = 1) {
  ConvAttrs a;
  a.kernel = {3, 3};
  a.stride = {stride, stride};
  a.pads = {1, 1, 1, 1};
  a.group = group;
  return a;
}

TEST(FusedHostOps, ConvWithAFusedActivationMatchesTheSeparatePass) {
  std::mt19937 rng(12);
  const Activation relu_act{Activation::Kind::kRelu};
  const Activation relu6{Activation::Kind::kClip, 0.0f, 6.0f};
  const Activation narrow{Activation::Kind::kClip, -0.25f, 0.5f};
  struct Case {
    Shape x, w;
    ConvAttrs attrs;
  };
  const std::vector<Case> cases = {{{1, 16, 12, 12}, {32, 16, 3, 3}, conv3x3(1)},
                                   {{2, 8, 9, 9}, {24, 8, 3, 3}, conv3x3(2)},
                                   {{1, 32, 10, 10}, {32, 1, 3, 3}, conv3x3(1, 32)},
                                   {{1, 64, 28, 28}, {128, 64, 3, 3}, conv3x3(1)}};  // split
  for (const Case& c : cases) {
    const Tensor x = random_tensor(c.x, rng), w = random_tensor(c.w, rng), b = random_tensor({c.w[0]}, rng);
    const Tensor plain = *conv2d(x, w, &b, c.attrs);
    const Tensor plain_portable = *conv2d_portable(x, w, &b, c.attrs);
    for (const Activation& act : {relu_act, relu6, narrow}) {
      Tensor want = plain;
      apply_activation(act, want.ptr(), want.ptr() + want.elements());
      auto got = conv2d(x, w, &b, c.attrs, ConvOptions{act, nullptr});
      ASSERT_TRUE(got.is_ok()) << got.status().to_string();
      expect_same(*got, want, 1e-5f);
      // The portable conv applies it to the same sums: the same bits.
      Tensor want_portable = plain_portable;
      apply_activation(act, want_portable.ptr(), want_portable.ptr() + want_portable.elements());
      EXPECT_EQ(conv2d_portable(x, w, &b, c.attrs, act)->data, want_portable.data);
    }
  }
  // Add with a fused Relu: the same bits as add then relu, broadcast or not.
  const Tensor a = random_tensor({1, 8, 70, 70}, rng), s = random_tensor({1, 8, 70, 70}, rng);
  const Tensor bias = random_tensor({8, 1, 1}, rng);
  EXPECT_EQ(add(a, s, relu_act)->data, relu(*add(a, s))->data);
  EXPECT_EQ(add(a, bias, relu_act)->data, relu(*add(a, bias))->data);
}

TEST(FusedHostOps, ModelCacheKeepsEachModelsWeightsApart) {
  std::mt19937 rng(13);
  const Tensor x = random_tensor({1, 32, 14, 14}, rng);
  const Tensor w1 = random_tensor({64, 32, 3, 3}, rng), w2 = random_tensor({64, 32, 3, 3}, rng);
  const Tensor want1 = *conv2d(x, w1, nullptr, conv3x3(1)), want2 = *conv2d(x, w2, nullptr, conv3x3(1));
  ModelCache model1, model2;
  for (int run = 0; run < 3; ++run) {
    EXPECT_EQ(conv2d(x, w1, nullptr, conv3x3(1), ConvOptions{{}, &model1})->data, want1.data);
    EXPECT_EQ(conv2d(x, w2, nullptr, conv3x3(1), ConvOptions{{}, &model2})->data, want2.data);
  }
  // The same layer again hits the entry made on the first run (oneDNN builds keep its layout).
  const size_t entries = model1.size();
  (void)conv2d(x, w1, nullptr, conv3x3(1), ConvOptions{{}, &model1});
  EXPECT_EQ(model1.size(), entries);
  // A model loaded after another one's end gets a cache of its own, even at the same address.
  Tensor reloaded = w1;
  for (float& v : reloaded.data) v = -v;
  ModelCache fresh;
  auto negated = conv2d(x, reloaded, nullptr, conv3x3(1), ConvOptions{{}, &fresh});
  ASSERT_TRUE(negated.is_ok());
  for (size_t i = 0; i < want1.data.size(); i += 97) EXPECT_NEAR(negated->data[i], -want1.data[i], 1e-4f);
}

Node node(std::string name, OpKind op, std::vector<std::string> in, std::string out, NodeAttrs attrs = {}) {
  return Node{std::move(name), op, std::move(in), {std::move(out)}, std::move(attrs)};
}

// image -> conv a -> relu -> conv b -> clip(0, 6) -> + (conv c of image) -> relu -> out; conv c's
// result is also read by a second relu that is a graph output, so it is not fused; conv b's clip
// is a graph output itself.
TEST(FusedHostOps, ExecutorFusesOnlyWhereTheActivationIsTheSoleReader) {
  std::mt19937 rng(14);
  Graph g;
  g.inputs = {{"image", {-1, 8, 10, 10}}};
  g.outputs = {{"out", {-1, 16, 10, 10}}, {"c_relu", {-1, 16, 10, 10}}, {"b6", {-1, 16, 10, 10}}};
  g.constants["a.w"] = random_tensor({16, 8, 3, 3}, rng);
  g.constants["b.w"] = random_tensor({16, 16, 3, 3}, rng);
  g.constants["c.w"] = random_tensor({16, 8, 3, 3}, rng);
  g.nodes = {node("a", OpKind::kConv, {"image", "a.w"}, "a", conv3x3(1)),
             node("a_relu", OpKind::kRelu, {"a"}, "ar"),
             node("b", OpKind::kConv, {"ar", "b.w"}, "b", conv3x3(1)),
             node("b_clip", OpKind::kClip, {"b"}, "b6", ClipAttrs{0.0f, 6.0f}),
             node("c", OpKind::kConv, {"image", "c.w"}, "c", conv3x3(1)),
             node("sum", OpKind::kAdd, {"b6", "c"}, "s"),
             node("sum_relu", OpKind::kRelu, {"s"}, "out"),
             node("c_relu", OpKind::kRelu, {"c"}, "c_relu")};
  const Tensor image = random_tensor({3, 8, 10, 10}, rng);
  auto k = [&](const char* name) -> const Tensor& { return *g.constant(name); };
  const Tensor ar = *relu(*conv2d(image, k("a.w"), nullptr, conv3x3(1)));
  const Tensor b6 = *clip(*conv2d(ar, k("b.w"), nullptr, conv3x3(1)), ClipAttrs{0.0f, 6.0f});
  const Tensor c = *conv2d(image, k("c.w"), nullptr, conv3x3(1));
  const Tensor out = *relu(*add(b6, c));
  ModelCache cache;
  for (ModelCache* with : {static_cast<ModelCache*>(nullptr), &cache, &cache}) {
    auto got = run_reference(g, {{"image", image}}, with);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    expect_same(got->at("out"), out, 1e-4f);
    expect_same(got->at("b6"), b6, 1e-4f);
    expect_same(got->at("c_relu"), *relu(c), 1e-4f);
  }
}

TEST(FusedHostOps, NhwcFormsMatchTheNchwOnes) {
  std::mt19937 rng(15);
  const Tensor x = random_tensor({2, 20, 9, 11}, rng);
  EXPECT_EQ(nhwc_to_nchw(nchw_to_nhwc(x)).data, x.data);
  const Tensor xh = nchw_to_nhwc(x);
  EXPECT_EQ(xh.data[static_cast<size_t>(((1 * 9 + 4) * 11 + 7) * 20 + 13)],
            x.data[static_cast<size_t>(((1 * 20 + 13) * 9 + 4) * 11 + 7)]);
  for (const PoolAttrs& a : {pool(3, 1, 1), pool(3, 2, 0, true), pool(2, 2, 0)}) {
    EXPECT_EQ(nhwc_to_nchw(*max_pool2d_nhwc(xh, a)).data, max_pool2d(x, a)->data);
  }
  EXPECT_EQ(global_average_pool_nhwc(xh)->data, global_average_pool(x)->data);
  const Tensor y = random_tensor({2, 12, 9, 11}, rng);
  const Tensor yh = nchw_to_nhwc(y);
  EXPECT_EQ(nhwc_to_nchw(*concat_channels_nhwc({&xh, &yh, &xh})).data, concat({&x, &y, &x}, 1)->data);
}

// conv -> maxpool -> two conv branches -> concat -> (a Mul, which has no NHWC form, on one branch)
// -> add -> global pool -> flatten -> gemm: the NHWC path against the NCHW ops chained by hand.
TEST(FusedHostOps, ExecutorKeepsNhwcBetweenConvsAndCopiesOnlyWhereNeeded) {
  std::mt19937 rng(16);
  Graph g;
  g.inputs = {{"image", {-1, 3, 16, 16}}};
  g.outputs = {{"logits", {-1, 5}}, {"pooled", {-1, 16, 8, 8}}};
  g.constants["stem.w"] = random_tensor({16, 3, 3, 3}, rng);
  g.constants["l.w"] = random_tensor({8, 16, 1, 1}, rng);
  g.constants["r.w"] = random_tensor({8, 16, 3, 3}, rng);
  g.constants["scale"] = random_tensor({1, 16, 1, 1}, rng);
  g.constants["fc.w"] = random_tensor({5, 16}, rng);
  ConvAttrs one;
  g.nodes = {node("stem", OpKind::kConv, {"image", "stem.w"}, "stem", conv3x3(1)),
             node("stem_relu", OpKind::kRelu, {"stem"}, "sr"),
             node("pool", OpKind::kMaxPool, {"sr"}, "pooled", pool(2, 2, 0)),
             node("l", OpKind::kConv, {"pooled", "l.w"}, "l", one),
             node("r", OpKind::kConv, {"pooled", "r.w"}, "r", conv3x3(1)),
             node("cat", OpKind::kConcat, {"l", "r"}, "cat", AxisAttrs{1}),
             node("scaled", OpKind::kMul, {"cat", "scale"}, "scaled"),
             node("sum", OpKind::kAdd, {"scaled", "pooled"}, "sum"),
             node("gap", OpKind::kGlobalAveragePool, {"sum"}, "gap"),
             node("flat", OpKind::kFlatten, {"gap"}, "flat", AxisAttrs{1}),
             node("fc", OpKind::kGemm, {"flat", "fc.w"}, "logits", GemmAttrs{1, 1, false, true})};
  const Tensor image = random_tensor({2, 3, 16, 16}, rng);
  auto k = [&](const char* name) -> const Tensor& { return *g.constant(name); };
  const Tensor pooled = *max_pool2d(*relu(*conv2d(image, k("stem.w"), nullptr, conv3x3(1))), pool(2, 2, 0));
  const Tensor l = *conv2d(pooled, k("l.w"), nullptr, one), r = *conv2d(pooled, k("r.w"), nullptr, conv3x3(1));
  const Tensor sum = *add(*mul(*concat({&l, &r}, 1), k("scale")), pooled);
  const Tensor logits = *gemm(*flatten(*global_average_pool(sum), 1), k("fc.w"), nullptr, GemmAttrs{1, 1, false, true});
  auto got = run_reference(g, {{"image", image}});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  expect_same(got->at("logits"), logits, 1e-4f);
  expect_same(got->at("pooled"), pooled, 1e-4f);
}

}  // namespace
}  // namespace tessera::host
