// Shape rules (accel/graph/op_shapes.h), validate_graph and infer_shapes.
#include <gtest/gtest.h>

#include <string>

#include "accel/graph/graph.h"
#include "accel/graph/op_shapes.h"

namespace tessera {
namespace {

// Expects `r` to fail with INVALID_ARGUMENT and a message containing `part`.
template <class T>
void expect_invalid(const Result<T>& r, const std::string& part) {
  ASSERT_FALSE(r.is_ok()) << "expected an error containing '" << part << "'";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().to_string();
  EXPECT_NE(r.status().message().find(part), std::string::npos) << r.status().message();
}

ConvAttrs conv_attrs(int k, int stride = 1, int pad = 0, int dilation = 1, int group = 1) {
  ConvAttrs a;
  a.kernel = {k, k};
  a.stride = {stride, stride};
  a.pads = {pad, pad, pad, pad};
  a.dilation = {dilation, dilation};
  a.group = group;
  return a;
}

PoolAttrs pool_attrs(int k, int stride, int pad = 0, bool ceil_mode = false) {
  PoolAttrs a;
  a.kernel = {k, k};
  a.stride = {stride, stride};
  a.pads = {pad, pad, pad, pad};
  a.ceil_mode = ceil_mode;
  return a;
}

TEST(ConvShape, SamePaddingStrideAndDilation) {
  EXPECT_EQ(*conv_output_shape({2, 3, 5, 5}, {8, 3, 3, 3}, nullptr, conv_attrs(3, 1, 1)), (Shape{2, 8, 5, 5}));
  // ResNet's stem: 224 + 6 - 7 = 223, / 2 = 111, + 1 = 112.
  EXPECT_EQ(*conv_output_shape({1, 3, 224, 224}, {64, 3, 7, 7}, nullptr, conv_attrs(7, 2, 3)),
            (Shape{1, 64, 112, 112}));
  // Dilation 2 spreads a 3-tap kernel over 5 inputs: 7 - 5 + 1 = 3.
  EXPECT_EQ(*conv_output_shape({1, 1, 7, 7}, {1, 1, 3, 3}, nullptr, conv_attrs(3, 1, 0, 2)), (Shape{1, 1, 3, 3}));
  // Non-square with asymmetric pads: H 4 + 1 + 0 - 2 + 1 = 4; W 6 + 0 + 2 - 3 = 5, / 2 + 1 = 3.
  ConvAttrs a;
  a.kernel = {2, 3};
  a.stride = {1, 2};
  a.pads = {1, 0, 0, 2};
  EXPECT_EQ(*conv_output_shape({1, 2, 4, 6}, {5, 2, 2, 3}, nullptr, a), (Shape{1, 5, 4, 3}));
}

TEST(ConvShape, GroupsAndDepthwise) {
  EXPECT_EQ(*conv_output_shape({1, 4, 5, 5}, {6, 2, 3, 3}, nullptr, conv_attrs(3, 1, 0, 1, 2)), (Shape{1, 6, 3, 3}));
  EXPECT_EQ(*conv_output_shape({1, 32, 8, 8}, {32, 1, 3, 3}, nullptr, conv_attrs(3, 2, 1, 1, 32)),
            (Shape{1, 32, 4, 4}));
  const Shape bias{6};
  EXPECT_TRUE(conv_output_shape({1, 4, 5, 5}, {6, 2, 3, 3}, &bias, conv_attrs(3, 1, 0, 1, 2)).is_ok());
}

TEST(ConvShape, ErrorsSayWhatIsWrong) {
  expect_invalid(conv_output_shape({1, 3, 5, 5}, {8, 4, 3, 3}, nullptr, conv_attrs(3)),
                 "input has 3 channels but weights [8,4,3,3]");
  expect_invalid(conv_output_shape({1, 5, 5, 5}, {4, 2, 3, 3}, nullptr, conv_attrs(3, 1, 0, 1, 2)),
                 "group 2 does not divide the 5 input channels");
  expect_invalid(conv_output_shape({1, 4, 5, 5}, {3, 2, 3, 3}, nullptr, conv_attrs(3, 1, 0, 1, 2)),
                 "does not divide the 3 output channels");
  expect_invalid(conv_output_shape({1, 4, 5, 5}, {4, 4, 3, 3}, nullptr, conv_attrs(3, 1, 0, 1, 0)),
                 "group must be >= 1");
  expect_invalid(conv_output_shape({1, 3, 5, 5}, {8, 3, 3, 3}, nullptr, conv_attrs(5)),
                 "kernel_shape [5,5] does not match weights [8,3,3,3]");
  const Shape bias{7};
  expect_invalid(conv_output_shape({1, 3, 5, 5}, {8, 3, 3, 3}, &bias, conv_attrs(3)), "bias must be [8], got [7]");
  expect_invalid(conv_output_shape({1, 3, 2, 2}, {8, 3, 3, 3}, nullptr, conv_attrs(3)),
                 "smaller than the dilated kernel");
  expect_invalid(conv_output_shape({3, 5, 5}, {8, 3, 3, 3}, nullptr, conv_attrs(3)), "4-D NCHW");
  expect_invalid(conv_output_shape({1, 3, 5, 5}, {8, 3, 3, 3}, nullptr, conv_attrs(3, 0)), "stride");
}

TEST(PoolShape, FloorAndCeilMode) {
  // 112 - 3 = 109: floor(109 / 2) + 1 = 55, ceil -> 56 (GoogLeNet's ceil-mode pools).
  EXPECT_EQ(*pool_output_shape({1, 64, 112, 112}, pool_attrs(3, 2)), (Shape{1, 64, 55, 55}));
  EXPECT_EQ(*pool_output_shape({1, 64, 112, 112}, pool_attrs(3, 2, 0, true)), (Shape{1, 64, 56, 56}));
  // ResNet's pool: 112 + 2 - 3 = 111, / 2 + 1 = 56.
  EXPECT_EQ(*pool_output_shape({1, 64, 112, 112}, pool_attrs(3, 2, 1)), (Shape{1, 64, 56, 56}));
  EXPECT_EQ(*pool_output_dim(5, 2, 2, 0, 0, false), 2);
  EXPECT_EQ(*pool_output_dim(5, 2, 2, 0, 0, true), 3);
}

TEST(PoolShape, CeilModeLastWindowMustStartInsideInputOrLeadingPad) {
  // in 3, k 2, s 2, pads 1/1: ceil(3 / 2) + 1 = 3 windows would start at -1, 1, 3; the third
  // starts in the trailing pad, so it is dropped (PyTorch gives 2).
  EXPECT_EQ(*pool_output_dim(3, 2, 2, 1, 1, true), 2);
  // in 4, k 3, s 2, pads 1/1: windows at -1, 1, 3; 3 is inside the input: kept.
  EXPECT_EQ(*pool_output_dim(4, 3, 2, 1, 1, true), 3);
}

TEST(PoolShape, Errors) {
  expect_invalid(pool_output_shape({1, 1, 4, 4}, pool_attrs(2, 2, 2)), "must be smaller than the kernel");
  expect_invalid(pool_output_shape({1, 1, 2, 2}, pool_attrs(3, 1)), "smaller than the kernel 3");
  expect_invalid(pool_output_shape({1, 4, 4}, pool_attrs(2, 2)), "4-D");
  expect_invalid(pool_output_shape({1, 1, 4, 4}, pool_attrs(2, 0)), "stride");
}

TEST(GlobalPoolShape, KeepsRankWithOnes) {
  EXPECT_EQ(*global_pool_output_shape({2, 512, 7, 7}), (Shape{2, 512, 1, 1}));
  expect_invalid(global_pool_output_shape({2, 512}), "[N, C, D1, ...]");
}

TEST(GemmShape, TransposesAndBias) {
  GemmAttrs a;
  a.trans_b = true;
  const Shape bias{4}, row{1, 4}, col{2, 1}, full{2, 4}, bad{3}, scalar{};
  EXPECT_EQ(*gemm_output_shape({2, 3}, {4, 3}, &bias, a), (Shape{2, 4}));
  EXPECT_TRUE(gemm_output_shape({2, 3}, {4, 3}, &row, a).is_ok());
  EXPECT_TRUE(gemm_output_shape({2, 3}, {4, 3}, &col, a).is_ok());
  EXPECT_TRUE(gemm_output_shape({2, 3}, {4, 3}, &full, a).is_ok());
  EXPECT_TRUE(gemm_output_shape({2, 3}, {4, 3}, &scalar, a).is_ok());
  expect_invalid(gemm_output_shape({2, 3}, {4, 3}, &bad, a), "C [3] does not broadcast to the output [2,4]");
  a.trans_a = true;
  EXPECT_EQ(*gemm_output_shape({3, 2}, {4, 3}, nullptr, a), (Shape{2, 4}));
  expect_invalid(gemm_output_shape({2, 3}, {3, 4}, nullptr, GemmAttrs{1, 1, false, true}), "inner dims differ");
  expect_invalid(gemm_output_shape({2, 3, 1}, {3, 4}, nullptr, GemmAttrs{}), "2-D");
}

TEST(MatMulShape, NumpySemantics) {
  EXPECT_EQ(*matmul_output_shape({3, 4}, {4, 5}), (Shape{3, 5}));
  EXPECT_EQ(*matmul_output_shape({2, 3, 4}, {4, 5}), (Shape{2, 3, 5}));
  EXPECT_EQ(*matmul_output_shape({2, 1, 3, 4}, {5, 4, 6}), (Shape{2, 5, 3, 6}));
  EXPECT_EQ(*matmul_output_shape({4}, {4, 5}), (Shape{5}));
  EXPECT_EQ(*matmul_output_shape({2, 3, 4}, {4}), (Shape{2, 3}));
  EXPECT_EQ(*matmul_output_shape({4}, {4}), (Shape{}));
  expect_invalid(matmul_output_shape({3, 4}, {5, 6}), "inner dims differ");
  expect_invalid(matmul_output_shape({2, 3, 4}, {3, 4, 5}), "batch dims do not broadcast");
  expect_invalid(matmul_output_shape({}, {4}), "rank >= 1");
}

TEST(BroadcastShape, Multidirectional) {
  EXPECT_EQ(*broadcast_shape({2, 3, 1}, {3, 4}), (Shape{2, 3, 4}));
  EXPECT_EQ(*broadcast_shape({5}, {}), (Shape{5}));
  EXPECT_EQ(*broadcast_shape({1, 3, 1}, {2, 1, 4}), (Shape{2, 3, 4}));
  EXPECT_EQ(*broadcast_shape({2, 64, 7, 7}, {2, 64, 7, 7}), (Shape{2, 64, 7, 7}));
  expect_invalid(broadcast_shape({2, 3}, {3, 2}), "shapes [2,3] and [3,2] do not broadcast");
}

TEST(ConcatShape, AnyAxis) {
  EXPECT_EQ(*concat_output_shape({{2, 1, 4}, {2, 3, 4}}, 1), (Shape{2, 4, 4}));
  EXPECT_EQ(*concat_output_shape({{2, 3}, {5, 3}}, 0), (Shape{7, 3}));
  EXPECT_EQ(*concat_output_shape({{2, 3}, {2, 1}}, -1), (Shape{2, 4}));
  expect_invalid(concat_output_shape({{2, 3}, {3, 3}}, 1), "differ outside axis 1");
  expect_invalid(concat_output_shape({{2, 3}, {2, 3, 1}}, 1), "differ outside axis 1");
  expect_invalid(concat_output_shape({{2, 3}}, 2), "axis 2 is out of range [-2, 1]");
  expect_invalid(concat_output_shape({}, 0), "at least one input");
}

TEST(FlattenShape, Axis) {
  EXPECT_EQ(*flatten_output_shape({2, 3, 4, 5}, 1), (Shape{2, 60}));
  EXPECT_EQ(*flatten_output_shape({2, 3, 4, 5}, 0), (Shape{1, 120}));
  EXPECT_EQ(*flatten_output_shape({2, 3, 4, 5}, 4), (Shape{120, 1}));
  EXPECT_EQ(*flatten_output_shape({2, 3, 4, 5}, -1), (Shape{24, 5}));
  expect_invalid(flatten_output_shape({2, 3}, 3), "out of range");
}

TEST(ReshapeShape, ZeroCopiesAndMinusOneInfers) {
  EXPECT_EQ(*reshape_output_shape({2, 3, 4}, {{0, -1}, false}), (Shape{2, 12}));
  EXPECT_EQ(*reshape_output_shape({2, 3, 4}, {{-1, 4}, false}), (Shape{6, 4}));
  EXPECT_EQ(*reshape_output_shape({2, 3, 4}, {{0, 0, -1, 2}, false}), (Shape{2, 3, 2, 2}));
  EXPECT_EQ(*reshape_output_shape({2, 512, 1, 1}, {{2, 512}, false}), (Shape{2, 512}));
  EXPECT_EQ(*reshape_output_shape({0, 3}, {{0, 3}, true}), (Shape{0, 3}));
  EXPECT_EQ(*reshape_output_shape({1, 1}, {{}, false}), (Shape{})) << "to a scalar";
}

TEST(ReshapeShape, BadTargets) {
  expect_invalid(reshape_output_shape({2, 3, 4}, {{-1, -1}, false}), "more than one -1");
  expect_invalid(reshape_output_shape({2, 3, 4}, {{5, -1}, false}), "cannot reshape [2,3,4] (24 elements)");
  expect_invalid(reshape_output_shape({2, 3, 4}, {{7}, false}), "(7 elements)");
  expect_invalid(reshape_output_shape({2, 3}, {{0, 0, 0}, false}), "copies dim 2 (0)");
  expect_invalid(reshape_output_shape({2, 3}, {{0, -1}, true}), "both 0 and -1");
  expect_invalid(reshape_output_shape({2, 3}, {{-2, 3}, false}), "negative dim");
}

TEST(NormShapes, BatchNormLrnSoftmax) {
  EXPECT_EQ(*batch_norm_output_shape({2, 3, 4, 4}, {3}, {3}, {3}, {3}), (Shape{2, 3, 4, 4}));
  expect_invalid(batch_norm_output_shape({2, 3, 4, 4}, {3}, {3}, {4}, {3}), "mean must be [3], got [4]");
  expect_invalid(lrn_output_shape({2, 3, 4, 4}, LrnAttrs{0, 1, 1, 1, false}), "size must be >= 1");
  expect_invalid(softmax_output_shape({2, 10}, 2), "axis 2 is out of range");
  EXPECT_EQ(*softmax_output_shape({2, 10}, -1), (Shape{2, 10}));
}

// ---- Graphs ----

Tensor filled(Shape shape) {
  Tensor t(std::move(shape));
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = 0.01f * static_cast<float>(i % 7);
  return t;
}

Node make_node(std::string name, OpKind op, std::vector<std::string> in, std::string out, NodeAttrs attrs = {}) {
  return Node{std::move(name), op, std::move(in), {std::move(out)}, std::move(attrs)};
}

// input [N,1,28,28] -> conv(8, 3x3, pad 1) -> relu -> maxpool 2 -> flatten -> fc(10) -> softmax
Graph small_cnn() {
  Graph g;
  g.name = "small_cnn";
  g.inputs = {{"image", {-1, 1, 28, 28}}};
  g.outputs = {{"prob", {-1, 10}}};
  g.constants["conv1.w"] = filled({8, 1, 3, 3});
  g.constants["conv1.b"] = filled({8});
  g.constants["fc.w"] = filled({10, 8 * 14 * 14});
  g.constants["fc.b"] = filled({10});
  g.nodes.push_back(make_node("conv1", OpKind::kConv, {"image", "conv1.w", "conv1.b"}, "c1", conv_attrs(3, 1, 1)));
  g.nodes.push_back(make_node("relu1", OpKind::kRelu, {"c1"}, "r1"));
  g.nodes.push_back(make_node("pool1", OpKind::kMaxPool, {"r1"}, "p1", pool_attrs(2, 2)));
  g.nodes.push_back(make_node("flat", OpKind::kFlatten, {"p1"}, "f", AxisAttrs{1}));
  g.nodes.push_back(make_node("fc", OpKind::kGemm, {"f", "fc.w", "fc.b"}, "logits", GemmAttrs{1, 1, false, true}));
  g.nodes.push_back(make_node("softmax", OpKind::kSoftmax, {"logits"}, "prob", AxisAttrs{1}));
  return g;
}

TEST(InferShapes, SmallCnn) {
  const Graph g = small_cnn();
  ASSERT_TRUE(validate_graph(g).is_ok()) << validate_graph(g).to_string();
  auto shapes = infer_shapes(g, 4);
  ASSERT_TRUE(shapes.is_ok()) << shapes.status().to_string();
  EXPECT_EQ(shapes->at("image"), (Shape{4, 1, 28, 28}));
  EXPECT_EQ(shapes->at("c1"), (Shape{4, 8, 28, 28}));
  EXPECT_EQ(shapes->at("r1"), (Shape{4, 8, 28, 28}));
  EXPECT_EQ(shapes->at("p1"), (Shape{4, 8, 14, 14}));
  EXPECT_EQ(shapes->at("f"), (Shape{4, 8 * 14 * 14}));
  EXPECT_EQ(shapes->at("logits"), (Shape{4, 10}));
  EXPECT_EQ(shapes->at("prob"), (Shape{4, 10}));
  EXPECT_EQ(shapes->count("conv1.w"), 0u) << "constants are not activations";
}

TEST(InferShapes, ShapeMismatchNamesTheNode) {
  Graph g = small_cnn();
  g.constants["conv1.w"] = filled({8, 3, 3, 3});  // expects 3 input channels; the image has 1
  auto shapes = infer_shapes(g, 2);
  ASSERT_FALSE(shapes.is_ok());
  EXPECT_EQ(shapes.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(shapes.status().message().rfind("node 'conv1' (Conv): input has 1 channels", 0), 0u)
      << shapes.status().message();

  Graph g2 = small_cnn();
  g2.constants["fc.w"] = filled({10, 100});
  auto s2 = infer_shapes(g2, 2);
  ASSERT_FALSE(s2.is_ok());
  EXPECT_NE(s2.status().message().find("node 'fc' (Gemm): inner dims differ"), std::string::npos)
      << s2.status().message();
}

TEST(InferShapes, BatchAndInputChecks) {
  const Graph g = small_cnn();
  expect_invalid(infer_shapes(g, 0), "batch must be >= 1");
  Graph g2 = small_cnn();
  g2.inputs[0].shape = {-1, 1, -1, 28};
  expect_invalid(infer_shapes(g2, 1), "graph input 'image' has an unknown dim");
}

TEST(InferShapes, SoftmaxWithoutAttrsUsesLastAxis) {
  Graph g;
  g.inputs = {{"x", {-1, 3, 4}}};
  g.outputs = {{"y", {}}};
  g.nodes.push_back(make_node("sm", OpKind::kSoftmax, {"x"}, "y"));
  EXPECT_EQ(node_axis(g.nodes[0]), -1);
  auto shapes = infer_shapes(g, 2);
  ASSERT_TRUE(shapes.is_ok()) << shapes.status().to_string();
  EXPECT_EQ(shapes->at("y"), (Shape{2, 3, 4}));
  g.nodes[0].op = OpKind::kFlatten;
  EXPECT_EQ(node_axis(g.nodes[0]), 1);
}

// Expects validate_graph(g) to fail with `code` and a message containing `part`.
void expect_invalid_graph(const Graph& g, StatusCode code, const std::string& part) {
  const Status s = validate_graph(g);
  ASSERT_FALSE(s.is_ok()) << "expected an error containing '" << part << "'";
  EXPECT_EQ(s.code(), code) << s.to_string();
  EXPECT_NE(s.message().find(part), std::string::npos) << s.message();
}

TEST(ValidateGraph, UnknownInputNamesTheNode) {
  Graph g = small_cnn();
  g.nodes[2].inputs = {"nope"};
  expect_invalid_graph(g, StatusCode::kInvalidArgument, "node 'pool1' (MaxPool): input 'nope'");
  // infer_shapes reports it the same way.
  auto shapes = infer_shapes(g, 1);
  ASSERT_FALSE(shapes.is_ok());
  EXPECT_EQ(shapes.status().code(), StatusCode::kInvalidArgument);
}

TEST(ValidateGraph, UseBeforeDefinition) {
  Graph g = small_cnn();
  std::swap(g.nodes[1], g.nodes[2]);  // pool1 now reads r1 before relu1 makes it
  expect_invalid_graph(g, StatusCode::kInvalidArgument, "node 'pool1' (MaxPool): input 'r1'");
}

TEST(ValidateGraph, StructureErrors) {
  Graph dup = small_cnn();
  dup.nodes[1].name = "conv1";
  expect_invalid_graph(dup, StatusCode::kInvalidArgument, "node 'conv1' (Relu): duplicate node name");

  Graph redefined = small_cnn();
  redefined.nodes[1].outputs = {"c1"};
  expect_invalid_graph(redefined, StatusCode::kInvalidArgument, "output 'c1' is already defined");

  Graph no_output = small_cnn();
  no_output.outputs = {{"missing", {}}};
  expect_invalid_graph(no_output, StatusCode::kInvalidArgument, "graph output 'missing'");

  Graph wrong_attrs = small_cnn();
  wrong_attrs.nodes[0].attrs = pool_attrs(3, 1);
  expect_invalid_graph(wrong_attrs, StatusCode::kInvalidArgument, "node 'conv1' (Conv): needs ConvAttrs");

  Graph arity = small_cnn();
  arity.nodes[1].inputs = {"c1", "c1"};
  expect_invalid_graph(arity, StatusCode::kInvalidArgument, "node 'relu1' (Relu): takes 1 operands, got 2");

  Graph missing_weight = small_cnn();
  missing_weight.nodes[0].inputs = {"image", ""};
  expect_invalid_graph(missing_weight, StatusCode::kInvalidArgument, "operand 1 is required but empty");

  Graph bad_constant = small_cnn();
  bad_constant.constants["fc.b"].data.pop_back();
  expect_invalid_graph(bad_constant, StatusCode::kInvalidArgument, "constant 'fc.b' has 9 values for shape [10]");

  Graph input_is_constant = small_cnn();
  input_is_constant.inputs.push_back({"fc.b", {10}});
  expect_invalid_graph(input_is_constant, StatusCode::kInvalidArgument, "'fc.b' is also a constant");

  Graph clip_operands = small_cnn();
  clip_operands.nodes[1] = make_node("clip", OpKind::kClip, {"c1", "fc.b"}, "r1");
  expect_invalid_graph(clip_operands, StatusCode::kInvalidArgument, "need ClipAttrs");
}

TEST(ValidateGraph, UnnamedNodesAreNumbered) {
  Graph g = small_cnn();
  g.nodes[1].name.clear();
  g.nodes[1].inputs = {"zzz"};
  expect_invalid_graph(g, StatusCode::kInvalidArgument, "node #1 (Relu): input 'zzz'");
}

TEST(OpKindName, OnnxSpelling) {
  EXPECT_STREQ(op_kind_name(OpKind::kConv), "Conv");
  EXPECT_STREQ(op_kind_name(OpKind::kBatchNorm), "BatchNormalization");
  EXPECT_STREQ(op_kind_name(OpKind::kLrn), "LRN");
  EXPECT_STREQ(op_kind_name(OpKind::kGlobalAveragePool), "GlobalAveragePool");
  EXPECT_STREQ(op_kind_name(OpKind::kIdentity), "Identity");
}

TEST(GraphConstant, Lookup) {
  const Graph g = small_cnn();
  ASSERT_NE(g.constant("fc.b"), nullptr);
  EXPECT_EQ(g.constant("fc.b")->shape, (Shape{10}));
  EXPECT_EQ(g.constant("image"), nullptr);
}

}  // namespace
}  // namespace tessera
