// The reference kernels of the families' operators: elementwise functions (Sigmoid, HardSigmoid,
// HardSwish, GELU, Erf, Sqrt), Sub/Div/Pow with broadcasting, Transpose, Slice, Gather, Pad,
// ReduceMean and LayerNormalization, against values worked out by hand or by a direct loop, and
// their refusals of malformed operands (wrong rank, bad axes) with a message saying what is wrong.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "accel/host/reference_ops.h"
#include "tests/unit/accel/host/reference_ops_test_support.h"

namespace tessera::host {
namespace {

using reference_test::expect_tensor;
using reference_test::random_tensor;

void expect_invalid(const Result<Tensor>& r, const std::string& fragment) {
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find(fragment), std::string::npos) << r.status().message();
}

TEST(LayoutOps, ElementwiseFunctions) {
  const Tensor x(Shape{6}, {-4.0f, -1.0f, 0.0f, 0.5f, 1.0f, 4.0f});
  std::vector<float> want_sigmoid, want_hard_sigmoid, want_hard_swish, want_gelu, want_erf, want_sqrt;
  for (float v : x.data) {
    want_sigmoid.push_back(static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(v)))));
    want_hard_sigmoid.push_back(std::clamp(0.2f * v + 0.5f, 0.0f, 1.0f));
    want_hard_swish.push_back(v * std::clamp(v + 3.0f, 0.0f, 6.0f) / 6.0f);
    want_gelu.push_back(static_cast<float>(0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)))));
    want_erf.push_back(static_cast<float>(std::erf(static_cast<double>(v))));
    want_sqrt.push_back(std::sqrt(std::fabs(v)));
  }
  expect_tensor(sigmoid(x), x.shape, want_sigmoid);
  expect_tensor(hard_sigmoid(x, HardSigmoidAttrs{}), x.shape, want_hard_sigmoid);
  expect_tensor(hard_swish(x), x.shape, want_hard_swish);
  expect_tensor(gelu(x), x.shape, want_gelu);
  expect_tensor(erf(x), x.shape, want_erf);
  Tensor magnitudes = x;
  for (float& v : magnitudes.data) v = std::fabs(v);
  expect_tensor(square_root(magnitudes), x.shape, want_sqrt);
  // Exact points: hard_swish(-3) = 0, hard_swish(3) = 3, gelu(0) = 0.
  expect_tensor(hard_swish(Tensor(Shape{2}, {-3.0f, 3.0f})), Shape{2}, {0.0f, 3.0f});
}

TEST(LayoutOps, SubDivPowBroadcast) {
  const Tensor a(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor row(Shape{3}, {1, 2, 4});
  expect_tensor(sub(a, row), a.shape, {0, 0, -1, 3, 3, 2});
  expect_tensor(div(a, row), a.shape, {1, 1, 0.75f, 4, 2.5f, 1.5f});
  expect_tensor(pow(a, Tensor(Shape{}, {2.0f})), a.shape, {1, 4, 9, 16, 25, 36});
  expect_tensor(pow(a, Tensor(Shape{1}, {0.5f})), a.shape,
                {1, std::sqrt(2.0f), std::sqrt(3.0f), 2, std::sqrt(5.0f), std::sqrt(6.0f)});
  expect_invalid(sub(a, Tensor(Shape{2}, {1, 2})), "broadcast");
}

TEST(LayoutOps, TransposeMatchesADirectLoop) {
  std::mt19937 rng(7);
  const Tensor x = random_tensor({2, 3, 4, 5}, rng);
  auto y = transpose(x, {0, 2, 3, 1});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  ASSERT_EQ(y->shape, (Shape{2, 4, 5, 3}));
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c)
      for (int h = 0; h < 4; ++h)
        for (int w = 0; w < 5; ++w)
          ASSERT_EQ(y->data[((n * 4 + h) * 5 + w) * 3 + c], x.data[((n * 3 + c) * 4 + h) * 5 + w]);
  expect_invalid(transpose(x, {0, 1, 2}), "perm has 3 entries for an input of rank 4");
  expect_invalid(transpose(x, {0, 1, 1, 2}), "not a permutation");
}

TEST(LayoutOps, SliceWithNegativeBoundsAndSteps) {
  const Tensor x(Shape{2, 6}, {0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15});
  expect_tensor(slice(x, SliceAttrs{{1}, {INT64_MAX}, {1}, {2}}), Shape{2, 3}, {1, 3, 5, 11, 13, 15});
  expect_tensor(slice(x, SliceAttrs{{-1}, {INT64_MIN}, {-1}, {-2}}), Shape{2, 3}, {5, 3, 1, 15, 13, 11});
  expect_tensor(slice(x, SliceAttrs{{1, 2}, {2, -2}, {}, {}}), Shape{1, 2}, {12, 13});
  expect_tensor(slice(x, SliceAttrs{{4}, {2}, {1}, {}}), Shape{2, 0}, {});
  expect_invalid(slice(x, SliceAttrs{{0}, {1}, {2}, {}}), "axis 2 is out of range");
  expect_invalid(slice(x, SliceAttrs{{0}, {1}, {1}, {0}}), "step 0");
  expect_invalid(slice(x, SliceAttrs{{0, 0}, {1}, {}, {}}), "differ in length");
}

TEST(LayoutOps, GatherScalarAndVectorIndices) {
  const Tensor x(Shape{2, 3, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  expect_tensor(gather(x, GatherAttrs{1, {0}, {}}), Shape{2, 2}, {0, 1, 6, 7});  // ViT's class token
  expect_tensor(gather(x, GatherAttrs{1, {2, -3}, {2}}), Shape{2, 2, 2}, {4, 5, 0, 1, 10, 11, 6, 7});
  expect_invalid(gather(x, GatherAttrs{1, {3}, {}}), "index 3 is out of range");
  expect_invalid(gather(x, GatherAttrs{3, {0}, {}}), "axis 3 is out of range");
}

TEST(LayoutOps, PadConstant) {
  const Tensor x(Shape{1, 1, 2, 2}, {1, 2, 3, 4});
  expect_tensor(pad(x, PadAttrs{{0, 0, 1, 0, 0, 0, 0, 1}, 0.0f}), Shape{1, 1, 3, 3}, {0, 0, 0, 1, 2, 0, 3, 4, 0});
  expect_tensor(pad(x, PadAttrs{{0, 0, 0, 1, 0, 0, 0, 0}, -1.0f}), Shape{1, 1, 2, 3}, {-1, 1, 2, -1, 3, 4});
  expect_invalid(pad(x, PadAttrs{{0, 0, 1, 1}, 0.0f}), "an input of rank 4 needs 8");
  expect_invalid(pad(x, PadAttrs{{0, 0, -1, 0, 0, 0, 0, 0}, 0.0f}), "negative pads");
}

TEST(LayoutOps, ReduceMeanOverAnyAxes) {
  std::mt19937 rng(3);
  const Tensor x = random_tensor({2, 3, 4}, rng);
  auto all = reduce_mean(x, ReduceAttrs{{}, false});
  ASSERT_TRUE(all.is_ok());
  double sum = 0;
  for (float v : x.data) sum += v;
  expect_tensor(all, Shape{}, {static_cast<float>(sum / 24)});
  // Non-adjacent axes 0 and 2, dims kept.
  auto outer = reduce_mean(x, ReduceAttrs{{0, -1}, true});
  std::vector<float> want;
  for (int c = 0; c < 3; ++c) {
    double s = 0;
    for (int n = 0; n < 2; ++n)
      for (int w = 0; w < 4; ++w) s += x.data[(n * 3 + c) * 4 + w];
    want.push_back(static_cast<float>(s / 8));
  }
  expect_tensor(outer, Shape{1, 3, 1}, want);
  expect_invalid(reduce_mean(x, ReduceAttrs{{3}, true}), "axis 3 is out of range");
  expect_invalid(reduce_mean(x, ReduceAttrs{{1, -2}, true}), "listed twice");
}

TEST(LayoutOps, LayerNormOverTrailingDims) {
  std::mt19937 rng(5);
  const Tensor x = random_tensor({2, 3, 4}, rng);
  const Tensor scale = random_tensor({4}, rng);
  const Tensor bias = random_tensor({4}, rng);
  auto y = layer_norm(x, scale, &bias, LayerNormAttrs{-1, 1e-5f});
  std::vector<float> want;
  for (int r = 0; r < 6; ++r) {
    double mean = 0, var = 0;
    for (int k = 0; k < 4; ++k) mean += x.data[r * 4 + k] / 4.0;
    for (int k = 0; k < 4; ++k) var += (x.data[r * 4 + k] - mean) * (x.data[r * 4 + k] - mean) / 4.0;
    for (int k = 0; k < 4; ++k) {
      want.push_back(
          static_cast<float>((x.data[r * 4 + k] - mean) / std::sqrt(var + 1e-5) * scale.data[k] + bias.data[k]));
    }
  }
  expect_tensor(y, x.shape, want);
  // Over the last two dims: scale [3, 4].
  const Tensor scale2 = random_tensor({3, 4}, rng);
  EXPECT_TRUE(layer_norm(x, scale2, nullptr, LayerNormAttrs{1, 1e-5f}).is_ok());
  expect_invalid(layer_norm(x, Tensor(Shape{3}, {1, 1, 1}), nullptr, LayerNormAttrs{-1, 1e-5f}),
                 "does not match the normalised dims");
  expect_invalid(layer_norm(x, scale, nullptr, LayerNormAttrs{3, 1e-5f}), "axis 3 is out of range");
}

}  // namespace
}  // namespace tessera::host
