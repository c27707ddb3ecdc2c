// The reference executor (accel/host/reference_executor.h) on small graphs: against the
// reference kernels chained by hand, batch splitting, outputs read later, and its errors.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "accel/host/reference_executor.h"
#include "accel/host/reference_ops.h"
#include "tests/unit/accel/host/reference_ops_test_support.h"

namespace tessera::host {
namespace {

using reference_test::expect_same;
using reference_test::expect_tensor;
using reference_test::pool;
using reference_test::random_tensor;

Node make_node(std::string name, OpKind op, std::vector<std::string> in, std::string out, NodeAttrs attrs = {}) {
  return Node{std::move(name), op, std::move(in), {std::move(out)}, std::move(attrs)};
}

ConvAttrs conv3x3_pad1() {
  ConvAttrs a;
  a.kernel = {3, 3};
  a.pads = {1, 1, 1, 1};
  return a;
}

// image [N,2,8,8] -> conv(4) -> bn -> relu -> +image' (1x1 conv to 4) -> maxpool 2 -> flatten
// -> fc(5) -> softmax; random weights.
Graph residual_cnn(std::mt19937& rng) {
  Graph g;
  g.inputs = {{"image", {-1, 2, 8, 8}}};
  g.outputs = {{"prob", {-1, 5}}};
  g.constants["c.w"] = random_tensor({4, 2, 3, 3}, rng);
  g.constants["c.b"] = random_tensor({4}, rng);
  g.constants["bn.scale"] = random_tensor({4}, rng);
  g.constants["bn.bias"] = random_tensor({4}, rng);
  g.constants["bn.mean"] = random_tensor({4}, rng);
  Tensor var = random_tensor({4}, rng);
  for (float& v : var.data) v = std::fabs(v) + 0.1f;
  g.constants["bn.var"] = var;
  g.constants["proj.w"] = random_tensor({4, 2, 1, 1}, rng);
  g.constants["fc.w"] = random_tensor({5, 4 * 4 * 4}, rng);
  g.constants["fc.b"] = random_tensor({5}, rng);
  g.nodes = {
      make_node("conv", OpKind::kConv, {"image", "c.w", "c.b"}, "c", conv3x3_pad1()),
      make_node("bn", OpKind::kBatchNorm, {"c", "bn.scale", "bn.bias", "bn.mean", "bn.var"}, "bn"),
      make_node("relu", OpKind::kRelu, {"bn"}, "r"),
      make_node("proj", OpKind::kConv, {"image", "proj.w"}, "p", ConvAttrs{}),
      make_node("add", OpKind::kAdd, {"r", "p"}, "sum"),
      make_node("pool", OpKind::kMaxPool, {"sum"}, "pooled", pool(2, 2, 0)),
      make_node("flat", OpKind::kFlatten, {"pooled"}, "flat", AxisAttrs{1}),
      make_node("fc", OpKind::kGemm, {"flat", "fc.w", "fc.b"}, "logits", GemmAttrs{1, 1, false, true}),
      make_node("softmax", OpKind::kSoftmax, {"logits"}, "prob", AxisAttrs{1}),
  };
  return g;
}

// The same network, op by op.
Tensor residual_cnn_by_hand(const Graph& g, const Tensor& image) {
  auto k = [&](const char* name) -> const Tensor& { return *g.constant(name); };
  Tensor c = *conv2d(image, k("c.w"), &k("c.b"), conv3x3_pad1());
  Tensor bn = *batch_norm(c, k("bn.scale"), k("bn.bias"), k("bn.mean"), k("bn.var"), BatchNormAttrs{});
  Tensor r = *relu(bn);
  Tensor p = *conv2d(image, k("proj.w"), nullptr, ConvAttrs{});
  Tensor pooled = *max_pool2d(*add(r, p), pool(2, 2, 0));
  Tensor logits = *gemm(*flatten(pooled, 1), k("fc.w"), &k("fc.b"), GemmAttrs{1, 1, false, true});
  return *softmax(logits, 1);
}

TEST(ReferenceExecutor, MatchesOpsChainedByHand) {
  std::mt19937 rng(11);
  const Graph g = residual_cnn(rng);
  for (int64_t batch : {1, 3}) {  // 3: split into halves of 1 and 2 on two threads
    const Tensor image = random_tensor({batch, 2, 8, 8}, rng);
    auto out = run_reference(g, {{"image", image}});
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    ASSERT_EQ(out->size(), 1u);
    const Tensor& prob = out->at("prob");
    expect_same(prob, residual_cnn_by_hand(g, image), 1e-5f);
    for (int64_t i = 0; i < batch; ++i) {
      float row = 0;
      for (int j = 0; j < 5; ++j) row += prob.data[static_cast<size_t>(i * 5 + j)];
      EXPECT_NEAR(row, 1.0f, 1e-5f);
    }
  }
}

// With node_seconds: the same answer, every node that ran has its time (a batch that would split
// runs whole, so their sum is within the call's), and a Relu run inside its Conv has none.
TEST(ReferenceExecutor, NodeSecondsTimeEachNodeThatRan) {
  std::mt19937 rng(12);
  Graph g = residual_cnn(rng);
  const Tensor image = random_tensor({3, 2, 8, 8}, rng);  // 3 images: split in two without timing
  NodeSeconds seconds(2, 42.0);                           // replaced, not added to
  const auto start = std::chrono::steady_clock::now();
  auto timed = run_reference(g, {{"image", image}}, nullptr, &seconds);
  const double call = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(timed.is_ok()) << timed.status().to_string();
  expect_same(timed->at("prob"), residual_cnn_by_hand(g, image), 1e-5f);
  ASSERT_EQ(seconds.size(), g.nodes.size());
  double sum = 0;
  for (size_t i = 0; i < seconds.size(); ++i) {
    EXPECT_GT(seconds[i], 0.0) << g.nodes[i].name;
    sum += seconds[i];
  }
  EXPECT_LE(sum, call);

  // relu straight after the conv: it runs inside the conv.
  g.nodes = {make_node("conv", OpKind::kConv, {"image", "c.w", "c.b"}, "c", conv3x3_pad1()),
             make_node("relu", OpKind::kRelu, {"c"}, "r"),
             make_node("pool", OpKind::kMaxPool, {"r"}, "prob", pool(2, 2, 0))};
  g.outputs = {{"prob", {-1, 4, 4, 4}}};
  ASSERT_TRUE(run_reference(g, {{"image", image}}, nullptr, &seconds).is_ok());
  ASSERT_EQ(seconds.size(), 3u);
  EXPECT_GT(seconds[0], 0.0);
  EXPECT_EQ(seconds[1], 0.0);
  EXPECT_GT(seconds[2], 0.0);
}

TEST(ReferenceExecutor, StaticBatchReshapeAndBranchesConcat) {
  // x [3,2,2,2] -> relu -> a; x -> identity -> b; concat(a, b, axis 1) -> reshape [3, -1].
  Graph g;
  g.inputs = {{"x", {3, 2, 2, 2}}};
  g.outputs = {{"y", {3, 16}}};
  g.nodes = {
      make_node("relu", OpKind::kRelu, {"x"}, "a"),
      make_node("id", OpKind::kIdentity, {"x"}, "b"),
      make_node("cat", OpKind::kConcat, {"a", "b"}, "ab", AxisAttrs{1}),
      make_node("reshape", OpKind::kReshape, {"ab"}, "y", ReshapeAttrs{{3, -1}, false}),
  };
  std::mt19937 rng(5);
  const Tensor x = random_tensor({3, 2, 2, 2}, rng);
  auto out = run_reference(g, {{"x", x}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  const Tensor& y = out->at("y");
  ASSERT_EQ(y.shape, (Shape{3, 16}));
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 8; ++j) {
      const float v = x.data[static_cast<size_t>(i * 8 + j)];
      EXPECT_EQ(y.data[static_cast<size_t>(i * 16 + j)], std::max(v, 0.0f));
      EXPECT_EQ(y.data[static_cast<size_t>(i * 16 + 8 + j)], v);
    }
  }
}

TEST(ReferenceExecutor, AxisZeroIsNotSplit) {
  // Softmax over axis 0 mixes the images of the batch: the batch must run whole.
  Graph g;
  g.inputs = {{"x", {-1, 2}}};
  g.outputs = {{"y", {}}};
  g.nodes = {make_node("softmax", OpKind::kSoftmax, {"x"}, "y", AxisAttrs{0})};
  auto out = run_reference(g, {{"x", Tensor({2, 2}, {0, 5, std::log(3.0f), 5})}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  expect_tensor(out->at("y"), {2, 2}, {0.25f, 0.5f, 0.75f, 0.5f});
}

TEST(ReferenceExecutor, ConstantWithBatchDimIsNotSplit) {
  // + a constant [2,2]: row i of the constant belongs to image i.
  Graph g;
  g.inputs = {{"x", {-1, 2}}};
  g.outputs = {{"s", {}}};
  g.constants["k"] = Tensor({2, 2}, {10, 20, 30, 40});
  g.nodes = {make_node("add", OpKind::kAdd, {"x", "k"}, "s")};
  auto out = run_reference(g, {{"x", Tensor({2, 2}, {0, 5, 1, 5})}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  expect_tensor(out->at("s"), {2, 2}, {10, 25, 31, 45});
}

TEST(ReferenceExecutor, OutputsThatAreAlsoReadLaterAndPassThrough) {
  // r = relu(x) is a graph output and also read (twice) by the Mul; x itself is an output.
  Graph g;
  g.inputs = {{"x", {-1, 3}}};
  g.outputs = {{"r", {}}, {"sq", {}}, {"x", {}}, {"r2", {}}};
  g.nodes = {
      make_node("relu", OpKind::kRelu, {"x"}, "r"),
      make_node("sq", OpKind::kMul, {"r", "r"}, "sq"),
      make_node("relu2", OpKind::kRelu, {"r"}, "r2"),
  };
  const Tensor x({2, 3}, {-1, 2, 3, 4, -5, 0.5f});
  auto out = run_reference(g, {{"x", x}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  expect_tensor(out->at("r"), {2, 3}, {0, 2, 3, 4, 0, 0.5f});
  expect_tensor(out->at("sq"), {2, 3}, {0, 4, 9, 16, 0, 0.25f});
  expect_tensor(out->at("r2"), {2, 3}, {0, 2, 3, 4, 0, 0.5f});
  expect_tensor(out->at("x"), {2, 3}, x.data);
}

TEST(ReferenceExecutor, MatMulWithConstantWeights) {
  Graph g;
  g.inputs = {{"x", {-1, 2}}};
  g.outputs = {{"y", {}}};
  g.constants["w"] = Tensor({2, 3}, {1, 0, 1, 0, 1, 1});
  g.nodes = {make_node("mm", OpKind::kMatMul, {"x", "w"}, "y")};
  auto out = run_reference(g, {{"x", Tensor({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8})}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  expect_tensor(out->at("y"), {4, 3}, {1, 2, 3, 3, 4, 7, 5, 6, 11, 7, 8, 15});
}

TEST(ReferenceExecutor, NodesReadingOnlyConstantsFeedWeights) {
  // Exporters emit Identity on shared weights: w2 = identity(w) has no batch dim.
  std::mt19937 rng(9);
  Graph g;
  g.inputs = {{"x", {-1, 2, 5, 5}}};
  g.outputs = {{"y", {}}};
  g.constants["w"] = random_tensor({3, 2, 3, 3}, rng);
  g.nodes = {
      make_node("w_copy", OpKind::kIdentity, {"w"}, "w2"),
      make_node("conv", OpKind::kConv, {"x", "w2"}, "y", conv3x3_pad1()),
  };
  const Tensor x = random_tensor({4, 2, 5, 5}, rng);
  auto out = run_reference(g, {{"x", x}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  expect_same(out->at("y"), *conv2d(x, *g.constant("w"), nullptr, conv3x3_pad1()), 1e-6f);
}

TEST(ReferenceExecutor, ErrorsNameTheInputOrNode) {
  std::mt19937 rng(2);
  const Graph g = residual_cnn(rng);
  auto missing = run_reference(g, {});
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("graph input 'image' (read by node 'conv' (Conv))"), std::string::npos)
      << missing.status().message();

  auto wrong = run_reference(g, {{"image", Tensor({1, 3, 8, 8})}});
  ASSERT_FALSE(wrong.is_ok());
  EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wrong.status().message().find("input 'image' has shape [1,3,8,8], the graph expects [-1,2,8,8]"),
            std::string::npos)
      << wrong.status().message();

  auto extra = run_reference(g, {{"image", Tensor({1, 2, 8, 8})}, {"other", Tensor({1})}});
  ASSERT_FALSE(extra.is_ok());
  EXPECT_NE(extra.status().message().find("'other' is not a graph input"), std::string::npos);

  Graph bad = g;
  bad.constants["fc.w"] = random_tensor({5, 10}, rng);
  auto mismatch = run_reference(bad, {{"image", Tensor({2, 2, 8, 8})}});
  ASSERT_FALSE(mismatch.is_ok());
  EXPECT_EQ(mismatch.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(mismatch.status().message().rfind("node 'fc' (Gemm): inner dims differ", 0), 0u)
      << mismatch.status().message();

  Graph dangling = g;
  dangling.nodes[2].inputs = {"nowhere"};
  auto nf = run_reference(dangling, {{"image", Tensor({1, 2, 8, 8})}});
  ASSERT_FALSE(nf.is_ok());
  EXPECT_EQ(nf.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(nf.status().message().find("node 'relu' (Relu)"), std::string::npos);
}

}  // namespace
}  // namespace tessera::host
