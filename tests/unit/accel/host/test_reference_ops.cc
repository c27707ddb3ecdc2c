// The float32 reference kernels (accel/host/reference_ops.h) on hand-checked cases, conv and
// gemm against naive loops on random shapes. The executor: test_reference_executor.cc.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>
#include <string>

#include "accel/host/reference_ops.h"
#include "tests/unit/accel/host/reference_ops_test_support.h"

namespace tessera::host {
namespace {

using reference_test::expect_same;
using reference_test::expect_tensor;
using reference_test::pool;
using reference_test::random_tensor;

template <class T>
void expect_error(const Result<T>& r, const std::string& part) {
  ASSERT_FALSE(r.is_ok()) << "expected an error containing '" << part << "'";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().to_string();
  EXPECT_NE(r.status().message().find(part), std::string::npos) << r.status().message();
}

// 1..9 as a [1,1,3,3] image.
Tensor image3x3() { return Tensor({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}); }
Tensor kernel2x2() { return Tensor({1, 1, 2, 2}, {1, 2, 3, 4}); }

ConvAttrs conv2x2(int stride, int pad, int dilation) {
  ConvAttrs a;
  a.kernel = {2, 2};
  a.stride = {stride, stride};
  a.pads = {pad, pad, pad, pad};
  a.dilation = {dilation, dilation};
  return a;
}

// ---- Conv ----

TEST(Conv2d, ValidNoPadWithBias) {
  // [1 2;4 5].[1 2;3 4] = 1+4+12+20 = 37, then 47, 67, 77; bias 0.5.
  const Tensor bias({1}, {0.5f});
  expect_tensor(conv2d(image3x3(), kernel2x2(), &bias, conv2x2(1, 0, 1)), {1, 1, 2, 2}, {37.5f, 47.5f, 67.5f, 77.5f});
}

TEST(Conv2d, StrideTwoPadOne) {
  // Windows start at -1 and 1: (0,0) sees only x00*w11 = 4; (0,1): x01*w10 + x02*w11 = 6+12;
  // (1,0): x10*w01 + x20*w11 = 8+28; (1,1): 5+12+24+36.
  expect_tensor(conv2d(image3x3(), kernel2x2(), nullptr, conv2x2(2, 1, 1)), {1, 1, 2, 2}, {4, 18, 36, 77});
}

TEST(Conv2d, DilationTwo) {
  // Taps at (0,0),(0,2),(2,0),(2,2): 1*1 + 3*2 + 7*3 + 9*4 = 64.
  expect_tensor(conv2d(image3x3(), kernel2x2(), nullptr, conv2x2(1, 0, 2)), {1, 1, 1, 1}, {64});
  // With pad 1 the output is 3x3; the centre sees taps (0,0),(0,2),(2,0),(2,2) again = 64 and
  // the top-left corner only x11 under w11: 5 * 4 = 20.
  auto r = conv2d(image3x3(), kernel2x2(), nullptr, conv2x2(1, 1, 2));
  ASSERT_TRUE(r.is_ok());
  ASSERT_EQ(r->shape, (Shape{1, 1, 3, 3}));
  EXPECT_FLOAT_EQ(r->data[0], 20);
  // (1,1): taps at rows 0,2 cols 0,2 -> 64. (0,1): rows -1,1 cols 0,2 -> x10*w10 + x12*w11 = 12+24.
  EXPECT_FLOAT_EQ(r->data[4], 64);
  EXPECT_FLOAT_EQ(r->data[1], 36);
}

TEST(Conv2d, GroupsTwo) {
  // 4 channels of one pixel; group 2, 1x1 kernels: out0 = 1*x0 + 2*x1, out1 = 3*x2 + 4*x3.
  const Tensor x({1, 4, 1, 1}, {1, 10, 100, 1000});
  const Tensor w({2, 2, 1, 1}, {1, 2, 3, 4});
  ConvAttrs a;
  a.group = 2;
  expect_tensor(conv2d(x, w, nullptr, a), {1, 2, 1, 1}, {21, 4300});
}

TEST(Conv2d, Depthwise) {
  // Two channels, each with its own 2x2 kernel over a 2x2 image.
  const Tensor x({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  const Tensor w({2, 1, 2, 2}, {1, 0, 0, 1, 0, 1, 1, 0});
  const Tensor bias({2}, {0.25f, -1});
  ConvAttrs a = conv2x2(1, 0, 1);
  a.group = 2;
  // ch0: 1*1 + 4*1 = 5 (+0.25); ch1: 6 + 7 = 13 (-1).
  expect_tensor(conv2d(x, w, &bias, a), {1, 2, 1, 1}, {5.25f, 12});
}

TEST(Conv2d, Errors) {
  ConvAttrs a = conv2x2(1, 0, 1);
  expect_error(conv2d(image3x3(), Tensor({1, 2, 2, 2}), nullptr, a), "input has 1 channels");
  a.group = 2;
  expect_error(conv2d(Tensor({1, 3, 3, 3}), Tensor({2, 1, 2, 2}), nullptr, a),
               "group 2 does not divide the 3 input channels");
  a.group = 1;
  const Tensor bias({2}, {0, 0});
  expect_error(conv2d(image3x3(), kernel2x2(), &bias, a), "bias must be [1]");
}

// A direct 7-loop convolution, independent of the im2col path.
Tensor naive_conv(const Tensor& x, const Tensor& w, const Tensor* b, const ConvAttrs& a) {
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), wd = x.dim(3), m = w.dim(0);
  const int64_t cg = c / a.group, mg = m / a.group, kh = w.dim(2), kw = w.dim(3);
  const int64_t oh = (h + a.pads[0] + a.pads[2] - a.dilation[0] * (kh - 1) - 1) / a.stride[0] + 1;
  const int64_t ow = (wd + a.pads[1] + a.pads[3] - a.dilation[1] * (kw - 1) - 1) / a.stride[1] + 1;
  Tensor y({n, m, oh, ow});
  for (int64_t in = 0; in < n; ++in)
    for (int64_t om = 0; om < m; ++om)
      for (int64_t r = 0; r < oh; ++r)
        for (int64_t s = 0; s < ow; ++s) {
          double sum = b ? b->data[static_cast<size_t>(om)] : 0.0;
          for (int64_t ic = 0; ic < cg; ++ic)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t ih = r * a.stride[0] - a.pads[0] + i * a.dilation[0];
                const int64_t iw = s * a.stride[1] - a.pads[1] + j * a.dilation[1];
                if (ih < 0 || ih >= h || iw < 0 || iw >= wd) continue;
                const int64_t xc = (om / mg) * cg + ic;
                sum += x.data[static_cast<size_t>(((in * c + xc) * h + ih) * wd + iw)] *
                       w.data[static_cast<size_t>(((om * cg + ic) * kh + i) * kw + j)];
              }
          y.data[static_cast<size_t>(((in * m + om) * oh + r) * ow + s)] = static_cast<float>(sum);
        }
  return y;
}

struct ReferenceConvCase {
  Shape x;
  int m, kh, kw, sh, sw, dh, dw;
  std::array<int, 4> pads;
  int group;
};

TEST(Conv2d, MatchesNaiveLoopsOnRandomShapes) {
  const std::vector<ReferenceConvCase> cases = {
      {{2, 3, 9, 9}, 4, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, 1},     // 1x1 direct path
      {{1, 3, 20, 22}, 5, 7, 7, 2, 2, 1, 1, {3, 3, 3, 3}, 1},   // stem-like
      {{2, 20, 20, 20}, 6, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}, 1},  // K = 180, plane 400: blocking
      {{1, 6, 11, 7}, 6, 3, 3, 2, 2, 1, 1, {1, 1, 1, 1}, 6},    // depthwise stride 2
      {{2, 4, 10, 9}, 6, 3, 2, 1, 3, 2, 1, {2, 0, 1, 2}, 2},    // groups, odd sizes, asym pads
      {{1, 2, 12, 12}, 3, 3, 3, 2, 1, 2, 3, {0, 4, 2, 0}, 1},   // dilation 2/3
      {{1, 5, 6, 6}, 2, 5, 5, 1, 1, 1, 1, {2, 2, 2, 2}, 1},     // K tail not a multiple of 4
      {{1, 4, 8, 8}, 4, 1, 1, 2, 2, 1, 1, {0, 0, 0, 0}, 1},     // 1x1 stride 2 (not direct)
  };
  std::mt19937 rng(7);
  for (const ReferenceConvCase& c : cases) {
    ConvAttrs a;
    a.kernel = {c.kh, c.kw};
    a.stride = {c.sh, c.sw};
    a.dilation = {c.dh, c.dw};
    a.pads = c.pads;
    a.group = c.group;
    const Tensor x = random_tensor(c.x, rng);
    const Tensor w = random_tensor({c.m, c.x[1] / c.group, c.kh, c.kw}, rng);
    const Tensor b = random_tensor({c.m}, rng);
    auto got = conv2d(x, w, &b, a);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    SCOPED_TRACE(shape_to_string(c.x) + " k" + std::to_string(c.kh) + "x" + std::to_string(c.kw));
    expect_same(*got, naive_conv(x, w, &b, a));
  }
}

// ---- Activations ----

TEST(Relu, ClampsNegatives) { expect_tensor(relu(Tensor({2, 2}, {-1, 0, 2.5f, -0.0001f})), {2, 2}, {0, 0, 2.5f, 0}); }

TEST(Clip, Relu6) { expect_tensor(clip(Tensor({4}, {-3, 2, 6, 7.5f}), ClipAttrs{0, 6}), {4}, {0, 2, 6, 6}); }

TEST(Identity, PassesThrough) { expect_tensor(identity(Tensor({1, 3}, {1, -2, 3})), {1, 3}, {1, -2, 3}); }

// ---- Pools ----

TEST(MaxPool, TwoByTwoStrideTwo) {
  const Tensor x({1, 1, 4, 4}, {1, 5, 2, 0, 3, 4, 8, 1, 0, -1, -5, -2, 9, 2, -3, -4});
  expect_tensor(max_pool2d(x, pool(2, 2, 0)), {1, 1, 2, 2}, {5, 8, 9, -2});
}

TEST(MaxPool, PaddingNeverWins) {
  const Tensor x({1, 1, 2, 2}, {-1, -2, -3, -4});
  // k2 s1 pad 1: 3x3 windows of one to four elements, every one negative.
  expect_tensor(max_pool2d(x, pool(2, 1, 1)), {1, 1, 3, 3}, {-1, -1, -2, -1, -1, -2, -3, -3, -4});
}

TEST(MaxPool, CeilMode) {
  // 3x3, k2 s2 ceil: windows rows/cols {0,1} and {2}: max(1,2,4,5)=5, max(3,6)=6, max(7,8)=8, 9.
  expect_tensor(max_pool2d(image3x3(), pool(2, 2, 0, true)), {1, 1, 2, 2}, {5, 6, 8, 9});
  expect_tensor(max_pool2d(image3x3(), pool(2, 2, 0, false)), {1, 1, 1, 1}, {5});
}

TEST(AveragePool, CountIncludePadBothWays) {
  // k2 s1 pad 1 over 1..9: the corner window holds only x00 = 1.
  auto incl = average_pool2d(image3x3(), pool(2, 1, 1, false, true));
  auto excl = average_pool2d(image3x3(), pool(2, 1, 1, false, false));
  ASSERT_TRUE(incl.is_ok() && excl.is_ok());
  ASSERT_EQ(incl->shape, (Shape{1, 1, 4, 4}));
  EXPECT_FLOAT_EQ(incl->data[0], 0.25f);  // 1 / 4
  EXPECT_FLOAT_EQ(excl->data[0], 1.0f);   // 1 / 1
  EXPECT_FLOAT_EQ(incl->data[1], 0.75f);  // (1+2) / 4
  EXPECT_FLOAT_EQ(excl->data[1], 1.5f);   // (1+2) / 2
  EXPECT_FLOAT_EQ(incl->data[5], 3.0f);   // (1+2+4+5) / 4, no padding
  EXPECT_FLOAT_EQ(excl->data[5], 3.0f);
  EXPECT_FLOAT_EQ(incl->data[15], 2.25f);  // 9 / 4
}

TEST(AveragePool, CeilModeWindowBeyondTrailingPad) {
  // Row [1 2 3 4], k 3, s 2, pad 1 each side, ceil: windows [-1,2) [1,4) [3,6).
  // The last one holds x3 = 4 and one pad position; the rest lies beyond the trailing pad.
  const Tensor x({1, 1, 1, 4}, {1, 2, 3, 4});
  PoolAttrs a;
  a.kernel = {1, 3};
  a.stride = {1, 2};
  a.pads = {0, 1, 0, 1};
  a.ceil_mode = true;
  a.count_include_pad = true;
  expect_tensor(average_pool2d(x, a), {1, 1, 1, 3}, {1, 3, 2});  // 3/3, 9/3, 4/2
  a.count_include_pad = false;
  expect_tensor(average_pool2d(x, a), {1, 1, 1, 3}, {1.5f, 3, 4});  // 3/2, 9/3, 4/1
  expect_tensor(max_pool2d(x, a), {1, 1, 1, 3}, {2, 4, 4});
}

TEST(Pool, Errors) {
  expect_error(max_pool2d(image3x3(), pool(2, 2, 2)), "must be smaller than the kernel");
  expect_error(average_pool2d(Tensor({1, 3, 3}), pool(2, 2, 0)), "4-D");
}

TEST(GlobalAveragePool, MeanPerChannel) {
  const Tensor x({2, 2, 1, 2}, {1, 3, -2, 4, 10, 20, 0, 0});
  expect_tensor(global_average_pool(x), {2, 2, 1, 1}, {2, 1, 15, 0});
}

// ---- Gemm / MatMul ----

TEST(Gemm, TransBWithBiasAlphaBeta) {
  const Tensor a({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b({4, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1});  // rows are B's columns
  const Tensor c({4}, {10, 20, 30, 40});
  // A B^T = [1 2 3 6; 4 5 6 15]; 2 * that + 0.5 * c.
  expect_tensor(gemm(a, b, &c, GemmAttrs{2, 0.5f, false, true}), {2, 4}, {7, 14, 21, 32, 13, 20, 27, 50});
  // Without C; alpha 1.
  expect_tensor(gemm(a, b, nullptr, GemmAttrs{1, 1, false, true}), {2, 4}, {1, 2, 3, 6, 4, 5, 6, 15});
}

TEST(Gemm, TransAAndColumnBias) {
  const Tensor at({3, 2}, {1, 4, 2, 5, 3, 6});  // A^T of [1 2 3; 4 5 6]
  const Tensor b({3, 1}, {1, 1, 1});
  const Tensor c({2, 1}, {100, 200});
  expect_tensor(gemm(at, b, &c, GemmAttrs{1, 1, true, false}), {2, 1}, {106, 215});
  expect_error(gemm(at, b, nullptr, GemmAttrs{}), "inner dims differ");
}

Tensor naive_matmul(const Tensor& a, const Tensor& b) {
  const int64_t m = a.dim(0), k = a.dim(1), n = b.dim(1);
  Tensor y({m, n});
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p)
        s += a.data[static_cast<size_t>(i * k + p)] * b.data[static_cast<size_t>(p * n + j)];
      y.data[static_cast<size_t>(i * n + j)] = static_cast<float>(s);
    }
  return y;
}

Tensor transposed(const Tensor& t) {
  Tensor r({t.dim(1), t.dim(0)});
  for (int64_t i = 0; i < t.dim(0); ++i)
    for (int64_t j = 0; j < t.dim(1); ++j)
      r.data[static_cast<size_t>(j * t.dim(0) + i)] = t.data[static_cast<size_t>(i * t.dim(1) + j)];
  return r;
}

TEST(Gemm, MatchesNaiveLoopsEveryPath) {
  std::mt19937 rng(3);
  for (int64_t m : {1, 2, 8, 9, 37}) {  // dot-product path up to 8 rows, transpose above
    const Tensor a = random_tensor({m, 300}, rng), b = random_tensor({300, 270}, rng);
    const Tensor want = naive_matmul(a, b);
    SCOPED_TRACE("m = " + std::to_string(m));
    expect_same(*gemm(a, b, nullptr, GemmAttrs{}), want);
    expect_same(*gemm(a, transposed(b), nullptr, GemmAttrs{1, 1, false, true}), want);
    expect_same(*gemm(transposed(a), b, nullptr, GemmAttrs{1, 1, true, false}), want);
    expect_same(*gemm(transposed(a), transposed(b), nullptr, GemmAttrs{1, 1, true, true}), want);
  }
}

TEST(MatMul, BatchedAndBroadcast) {
  // [2,2,3] x [3,2]: each batch times the same B.
  const Tensor a({2, 2, 3}, {1, 2, 3, 4, 5, 6, 1, 0, 0, 0, 1, 0});
  const Tensor b({3, 2}, {1, 2, 3, 4, 5, 6});
  expect_tensor(matmul(a, b), {2, 2, 2}, {22, 28, 49, 64, 1, 2, 3, 4});
  // [2,1,1,2] x [3,2,1]: batch dims broadcast to [2,3].
  const Tensor a2({2, 1, 1, 2}, {1, 2, 3, 4});
  const Tensor b2({3, 2, 1}, {1, 0, 0, 1, 1, 1});
  expect_tensor(matmul(a2, b2), {2, 3, 1, 1}, {1, 2, 3, 3, 4, 7});
}

TEST(MatMul, VectorOperands) {
  const Tensor m({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_tensor(matmul(Tensor({2}, {1, -1}), m), {3}, {-3, -3, -3});
  expect_tensor(matmul(m, Tensor({3}, {1, 0, 2})), {2}, {7, 16});
  expect_tensor(matmul(Tensor({3}, {1, 2, 3}), Tensor({3}, {4, 5, 6})), {}, {32});
  expect_error(matmul(m, m), "inner dims differ");
}

// ---- Elementwise ----

TEST(Add, Broadcast231With34) {
  // a[i,j,0] = 100i + 10j; b[j,k] = 1000j + k: out[i,j,k] = 100i + 1010j + k.
  Tensor a({2, 3, 1});
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) a.data[static_cast<size_t>(i) * 3 + static_cast<size_t>(j)] = 100.0f * i + 10.0f * j;
  Tensor b({3, 4});
  for (int j = 0; j < 3; ++j)
    for (int k = 0; k < 4; ++k) b.data[static_cast<size_t>(j) * 4 + static_cast<size_t>(k)] = 1000.0f * j + k;
  std::vector<float> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) want.push_back(100.0f * i + 1010.0f * j + k);
  expect_tensor(add(a, b), {2, 3, 4}, want);
  expect_tensor(add(b, a), {2, 3, 4}, want);
}

TEST(Add, SameShapeAndScalar) {
  expect_tensor(add(Tensor({2}, {1, 2}), Tensor({2}, {10, 20})), {2}, {11, 22});
  expect_tensor(add(Tensor({2}, {1, 2}), Tensor({}, {0.5f})), {2}, {1.5f, 2.5f});
  expect_error(add(Tensor({2, 3}), Tensor({3, 2})), "do not broadcast");
}

TEST(Mul, PerChannelScale) {
  // [1,2,1,2] * [2,1,1]: channel 0 x2, channel 1 x-1.
  expect_tensor(mul(Tensor({1, 2, 1, 2}, {1, 2, 3, 4}), Tensor({2, 1, 1}, {2, -1})), {1, 2, 1, 2}, {2, 4, -3, -4});
}

// ---- Data movement ----

TEST(Concat, ChannelsAndOtherAxes) {
  const Tensor a({2, 1, 2}, {1, 2, 3, 4});
  const Tensor b({2, 2, 2}, {5, 6, 7, 8, 9, 10, 11, 12});
  expect_tensor(concat({&a, &b}, 1), {2, 3, 2}, {1, 2, 5, 6, 7, 8, 3, 4, 9, 10, 11, 12});
  const Tensor c({1, 1, 2}, {0, 0});
  expect_tensor(concat({&a, &c}, 0), {3, 1, 2}, {1, 2, 3, 4, 0, 0});
  const Tensor d({2, 1, 1}, {-1, -2});
  expect_tensor(concat({&a, &d}, -1), {2, 1, 3}, {1, 2, -1, 3, 4, -2});
  expect_error(concat({&a, &b}, 2), "differ outside axis 2");
}

TEST(Flatten, KeepsData) {
  expect_tensor(flatten(Tensor({2, 1, 2, 1}, {1, 2, 3, 4}), 1), {2, 2}, {1, 2, 3, 4});
  expect_tensor(flatten(Tensor({2, 1, 2, 1}, {1, 2, 3, 4}), 0), {1, 4}, {1, 2, 3, 4});
}

TEST(Reshape, ZeroAndMinusOne) {
  Tensor x({2, 3, 2});
  for (size_t i = 0; i < x.data.size(); ++i) x.data[i] = static_cast<float>(i);
  auto r = reshape(x, ReshapeAttrs{{0, -1}, false});
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->shape, (Shape{2, 6}));
  EXPECT_EQ(r->data, x.data);
  expect_error(reshape(x, ReshapeAttrs{{5, -1}, false}), "cannot reshape [2,3,2]");
  expect_error(reshape(x, ReshapeAttrs{{-1, -1}, false}), "more than one -1");
}

// ---- Normalisation ----

TEST(BatchNorm, Inference) {
  // ch0: (x - 1) / 2 * 1 + 1; ch1: (x - 2) / 0.5 * 0.5 - 1.
  const Tensor x({1, 2, 1, 2}, {3, 5, 4, 6});
  expect_tensor(batch_norm(x, Tensor({2}, {1, 0.5f}), Tensor({2}, {1, -1}), Tensor({2}, {1, 2}),
                           Tensor({2}, {4, 0.25f}), BatchNormAttrs{0}),
                {1, 2, 1, 2}, {2, 3, 1, 3});
  expect_error(batch_norm(x, Tensor({3}), Tensor({2}), Tensor({2}), Tensor({2}), BatchNormAttrs{}),
               "scale must be [2]");
}

TEST(Lrn, FiveChannelsSizeThree) {
  // x = 1..5 over channels. size 3 sums channels c-1..c+1: 5, 14, 29, 50, 41.
  // alpha/size = 1, beta = 1, bias = 1: y = x / (1 + sum).
  const Tensor x({1, 5, 1, 1}, {1, 2, 3, 4, 5});
  expect_tensor(lrn(x, LrnAttrs{3, 3.0f, 1.0f, 1.0f, false}), {1, 5, 1, 1},
                {1.0f / 6, 2.0f / 15, 3.0f / 30, 4.0f / 51, 5.0f / 42});
}

TEST(Lrn, EvenSizeLooksAheadAndPowBeta) {
  // size 2: floor(1/2) = 0 channels before, ceil(1/2) = 1 after. alpha/size = 1, bias 0,
  // beta 0.5: y = x / sqrt(x_c^2 + x_{c+1}^2).
  const Tensor x({1, 3, 1, 1}, {3, 4, 12});
  expect_tensor(lrn(x, LrnAttrs{2, 2.0f, 0.5f, 0.0f, false}), {1, 3, 1, 1}, {3.0f / 5, 4.0f / 12.649111f, 1});
  // AlexNet-style size 5, beta 0.75 on 5 channels at 2 pixels: centre channel sums all five.
  Tensor y({1, 5, 1, 2});
  for (int c = 0; c < 5; ++c) {
    y.data[2 * static_cast<size_t>(c)] = static_cast<float>(c + 1);
    y.data[2 * static_cast<size_t>(c) + 1] = -static_cast<float>(c);
  }
  auto r = lrn(y, LrnAttrs{5, 1e-2f, 0.75f, 2.0f, false});
  ASSERT_TRUE(r.is_ok());
  // channel 2, pixel 0: x = 3, sum 1+4+9+16+25 = 55; pixel 1: x = -2, sum 0+1+4+9+16 = 30.
  EXPECT_NEAR(r->data[4], 3.0f / std::pow(2.0f + 1e-2f / 5 * 55, 0.75f), 1e-6f);
  EXPECT_NEAR(r->data[5], -2.0f / std::pow(2.0f + 1e-2f / 5 * 30, 0.75f), 1e-6f);
  // channel 0, pixel 0: channels 0..2 -> 1 + 4 + 9 = 14.
  EXPECT_NEAR(r->data[0], 1.0f / std::pow(2.0f + 1e-2f / 5 * 14, 0.75f), 1e-6f);
}

TEST(Softmax, StableWithLargeValues) {
  // e^-2, e^-1, 1 normalised; a naive exp(1000) would overflow.
  const float s = std::exp(-2.0f) + std::exp(-1.0f) + 1.0f;
  expect_tensor(softmax(Tensor({1, 3}, {1000, 1001, 1002}), 1), {1, 3},
                {std::exp(-2.0f) / s, std::exp(-1.0f) / s, 1.0f / s});
  expect_tensor(softmax(Tensor({1, 3}, {-1000, -1000, -1000}), -1), {1, 3}, {1.0f / 3, 1.0f / 3, 1.0f / 3});
}

TEST(Softmax, AlongAnInnerAxis) {
  // [2,2] along axis 0: columns normalise: col 0 {0, ln 3} -> {1/4, 3/4}; col 1 {5, 5}.
  expect_tensor(softmax(Tensor({2, 2}, {0, 5, std::log(3.0f), 5}), 0), {2, 2}, {0.25f, 0.5f, 0.75f, 0.5f});
  expect_error(softmax(Tensor({2, 2}), 2), "out of range");
}

}  // namespace
}  // namespace tessera::host
