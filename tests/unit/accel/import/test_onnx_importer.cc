// The ONNX importer on models built here with the protobuf API: attribute mapping, constant
// folding, and a clear error (naming the node) for everything it must refuse.
#include <gtest/gtest.h>

#include <string>

#include "accel/import/onnx/onnx_importer.h"
#include "onnx.pb.h"
#include "tests/unit/accel/import/onnx_model_builder.h"

namespace tessera {
namespace {

using tessera::onnx::AttributeProto;
using tessera::onnx::NodeProto;
using tessera::onnx::TensorProto;
using testing::expect_import_error;
using testing::ModelBuilder;

TEST(OnnxImporter, ConvAttributesAndConstants) {
  ModelBuilder b;
  b.input("x", {1, 4, 9, 9}).output("y");
  b.initializer("w", {8, 2, 3, 3}, std::vector<float>(8 * 2 * 9, 0.5f));
  b.initializer("bias", {8}, std::vector<float>(8, 1.0f));
  NodeProto* conv = b.node("Conv", {"x", "w", "bias"}, {"y"}, "conv1");
  ModelBuilder::ints(conv, "strides", {2, 1});
  ModelBuilder::ints(conv, "pads", {1, 2, 3, 4});
  ModelBuilder::ints(conv, "dilations", {1, 2});
  ModelBuilder::integer(conv, "group", 2);

  auto graph = b.import();
  ASSERT_TRUE(graph.is_ok()) << graph.status().to_string();
  ASSERT_EQ(graph->nodes.size(), 1u);
  const Node& n = graph->nodes[0];
  EXPECT_EQ(n.name, "conv1");
  EXPECT_EQ(n.op, OpKind::kConv);
  const auto& a = std::get<ConvAttrs>(n.attrs);
  EXPECT_EQ(a.kernel, (std::array<int, 2>{3, 3}));  // taken from the weight when kernel_shape is absent
  EXPECT_EQ(a.stride, (std::array<int, 2>{2, 1}));
  EXPECT_EQ(a.dilation, (std::array<int, 2>{1, 2}));
  EXPECT_EQ(a.pads, (std::array<int, 4>{1, 2, 3, 4}));
  EXPECT_EQ(a.group, 2);
  ASSERT_EQ(graph->inputs.size(), 1u);
  EXPECT_EQ(graph->inputs[0].shape, (Shape{-1, 4, 9, 9}));
  ASSERT_NE(graph->constant("w"), nullptr);
  EXPECT_EQ(graph->constant("w")->shape, (Shape{8, 2, 3, 3}));
  EXPECT_FLOAT_EQ(graph->constant("bias")->data[7], 1.0f);
}

TEST(OnnxImporter, InitializersListedAsInputsAreNotGraphInputs) {
  ModelBuilder b;
  b.input("x", {1, 3}).input("w", {3, 2}).output("y");
  b.initializer("w", {3, 2}, {1, 2, 3, 4, 5, 6});
  b.node("MatMul", {"x", "w"}, {"y"});
  auto graph = b.import();
  ASSERT_TRUE(graph.is_ok()) << graph.status().to_string();
  ASSERT_EQ(graph->inputs.size(), 1u);
  EXPECT_EQ(graph->inputs[0].name, "x");
}

TEST(OnnxImporter, ClipBoundsFromConstantOperands) {
  ModelBuilder b;
  b.input("x", {1, 4}).output("y");
  b.initializer("lo", {}, {0.0f});
  b.initializer("hi", {}, {6.0f});
  b.node("Clip", {"x", "lo", "hi"}, {"y"}, "relu6");
  auto graph = b.import();
  ASSERT_TRUE(graph.is_ok()) << graph.status().to_string();
  const auto& clip = std::get<ClipAttrs>(graph->nodes[0].attrs);
  EXPECT_FLOAT_EQ(clip.min, 0.0f);
  EXPECT_FLOAT_EQ(clip.max, 6.0f);
  EXPECT_EQ(graph->nodes[0].inputs.size(), 1u);
}

TEST(OnnxImporter, ConstantNodesAreFoldedAndReshapeShapeIsRead) {
  ModelBuilder b;
  b.input("x", {1, 2, 3, 4}).output("y");
  NodeProto* c = b.node("Constant", {}, {"shape"});
  AttributeProto* value = c->add_attribute();
  value->set_name("value");
  value->set_type(AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(TensorProto::INT64);
  value->mutable_t()->add_dims(2);
  value->mutable_t()->add_int64_data(0);
  value->mutable_t()->add_int64_data(-1);
  b.node("Reshape", {"x", "shape"}, {"y"}, "flatten_by_reshape");
  auto graph = b.import();
  ASSERT_TRUE(graph.is_ok()) << graph.status().to_string();
  ASSERT_EQ(graph->nodes.size(), 1u);
  const auto& r = std::get<ReshapeAttrs>(graph->nodes[0].attrs);
  EXPECT_EQ(r.shape, (Shape{0, -1}));
  EXPECT_EQ(graph->nodes[0].inputs.size(), 1u);
}

TEST(OnnxImporter, DropoutBecomesIdentityAndSoftmaxAxisFollowsOpset) {
  for (int64_t opset : {11, 13}) {
    ModelBuilder b(opset);
    b.input("x", {1, 10}).output("y");
    b.node("Dropout", {"x"}, {"d"});
    b.node("Softmax", {"d"}, {"y"});
    auto graph = b.import();
    ASSERT_TRUE(graph.is_ok()) << graph.status().to_string();
    EXPECT_EQ(graph->nodes[0].op, OpKind::kIdentity);
    EXPECT_EQ(std::get<AxisAttrs>(graph->nodes[1].attrs).axis, opset < 13 ? 1 : -1);
  }
}

TEST(OnnxImporter, PoolingGemmBatchNormLrnAttributes) {
  ModelBuilder b;
  b.input("x", {1, 3, 8, 8}).output("y");
  NodeProto* mp = b.node("MaxPool", {"x"}, {"p"});
  ModelBuilder::ints(mp, "kernel_shape", {3, 3});
  ModelBuilder::ints(mp, "strides", {2, 2});
  ModelBuilder::integer(mp, "ceil_mode", 1);
  NodeProto* ap = b.node("AveragePool", {"p"}, {"q"});
  ModelBuilder::ints(ap, "kernel_shape", {2, 2});
  ModelBuilder::ints(ap, "pads", {1, 1, 1, 1});
  ModelBuilder::integer(ap, "count_include_pad", 1);
  NodeProto* lrn = b.node("LRN", {"q"}, {"l"});
  ModelBuilder::integer(lrn, "size", 3);
  ModelBuilder::real(lrn, "alpha", 2e-4f);
  for (const char* n : {"s", "bb", "m", "v"}) b.initializer(n, {3}, {1, 1, 1});
  NodeProto* bn = b.node("BatchNormalization", {"l", "s", "bb", "m", "v"}, {"n"});
  ModelBuilder::real(bn, "epsilon", 1e-3f);
  b.node("Flatten", {"n"}, {"f"});
  b.initializer("gw", {4, 75}, std::vector<float>(4 * 75, 0.1f));  // the import infers shapes: 3 x 5 x 5
  NodeProto* gemm = b.node("Gemm", {"f", "gw"}, {"y"});
  ModelBuilder::integer(gemm, "transB", 1);
  ModelBuilder::real(gemm, "alpha", 0.5f);

  auto graph = b.import();
  ASSERT_TRUE(graph.is_ok()) << graph.status().to_string();
  ASSERT_EQ(graph->nodes.size(), 6u);
  const auto& max_pool = std::get<PoolAttrs>(graph->nodes[0].attrs);
  EXPECT_TRUE(max_pool.ceil_mode);
  EXPECT_EQ(max_pool.kernel, (std::array<int, 2>{3, 3}));
  const auto& avg_pool = std::get<PoolAttrs>(graph->nodes[1].attrs);
  EXPECT_TRUE(avg_pool.count_include_pad);
  EXPECT_EQ(avg_pool.pads, (std::array<int, 4>{1, 1, 1, 1}));
  EXPECT_EQ(std::get<LrnAttrs>(graph->nodes[2].attrs).size, 3);
  EXPECT_FLOAT_EQ(std::get<LrnAttrs>(graph->nodes[2].attrs).alpha, 2e-4f);
  EXPECT_FLOAT_EQ(std::get<BatchNormAttrs>(graph->nodes[3].attrs).epsilon, 1e-3f);
  EXPECT_EQ(std::get<AxisAttrs>(graph->nodes[4].attrs).axis, 1);
  const auto& g = std::get<GemmAttrs>(graph->nodes[5].attrs);
  EXPECT_TRUE(g.trans_b);
  EXPECT_FALSE(g.trans_a);
  EXPECT_FLOAT_EQ(g.alpha, 0.5f);
}

TEST(OnnxImporter, GarbageBytesAreInvalidArgument) {
  const std::string junk = "\x08\x96\x01this is not an onnx file\xff\xff\xff";
  expect_import_error(import_onnx({reinterpret_cast<const uint8_t*>(junk.data()), junk.size()}),
                      StatusCode::kInvalidArgument, "ONNX");
  expect_import_error(import_onnx({}), StatusCode::kInvalidArgument, "empty");
}

TEST(OnnxImporter, MissingFileIsNotFound) {
  expect_import_error(import_onnx_file("/nonexistent/model.onnx"), StatusCode::kNotFound, "/nonexistent/model.onnx");
}

TEST(OnnxImporter, UnsupportedOperatorNamesTheNode) {
  ModelBuilder b;
  b.input("x", {1, 4}).output("y");
  b.node("Sin", {"x"}, {"y"}, "weird_sine");
  expect_import_error(b.import(), StatusCode::kUnimplemented, "node 'weird_sine' (Sin)");
}

TEST(OnnxImporter, OpsetOutsideTheSupportedRangeIsRefused) {
  ModelBuilder b(9);
  b.input("x", {1, 4}).output("y");
  b.node("Relu", {"x"}, {"y"});
  expect_import_error(b.import(), StatusCode::kUnimplemented, "opset 9");
}

TEST(OnnxImporter, NonConstantReshapeShapeIsRefused) {
  ModelBuilder b;
  b.input("x", {1, 4}).input("s", {2}).output("y");
  b.node("Reshape", {"x", "s"}, {"y"}, "dynamic_reshape");
  expect_import_error(b.import(), StatusCode::kUnimplemented, "node 'dynamic_reshape' (Reshape)");
}

TEST(OnnxImporter, SamePaddingAndBadAttributesAreRefused) {
  {
    ModelBuilder b;
    b.input("x", {1, 1, 4, 4}).output("y");
    b.initializer("w", {1, 1, 3, 3}, std::vector<float>(9, 1));
    NodeProto* conv = b.node("Conv", {"x", "w"}, {"y"}, "same_conv");
    AttributeProto* a = conv->add_attribute();
    a->set_name("auto_pad");
    a->set_type(AttributeProto::STRING);
    a->set_s("SAME_UPPER");
    expect_import_error(b.import(), StatusCode::kUnimplemented, "auto_pad=SAME_UPPER");
  }
  {
    ModelBuilder b;
    b.input("x", {1, 1, 4, 4}).output("y");
    NodeProto* pool = b.node("MaxPool", {"x"}, {"y"}, "pool3d");
    ModelBuilder::ints(pool, "kernel_shape", {2, 2, 2});
    expect_import_error(b.import(), StatusCode::kUnimplemented, "node 'pool3d' (MaxPool)");
  }
  {
    ModelBuilder b;
    b.input("x", {1, 1, 4, 4}).output("y");
    NodeProto* pool = b.node("MaxPool", {"x"}, {"y"}, "typed_wrong");
    AttributeProto* a = pool->add_attribute();
    a->set_name("kernel_shape");
    a->set_type(AttributeProto::FLOAT);
    a->set_f(2.0f);
    expect_import_error(b.import(), StatusCode::kInvalidArgument, "'kernel_shape' must be a list of ints");
  }
}

TEST(OnnxImporter, TruncatedWeightsAreInvalidArgument) {
  ModelBuilder b;
  b.input("x", {1, 4}).output("y");
  TensorProto* w = b.initializer("w", {4, 4}, std::vector<float>(16, 1.0f));
  w->mutable_raw_data()->resize(10);
  b.node("MatMul", {"x", "w"}, {"y"});
  expect_import_error(b.import(), StatusCode::kInvalidArgument, "initializer 'w'");
}

TEST(OnnxImporter, UndefinedOperandIsAnErrorNamingTheNode) {
  ModelBuilder b;
  b.input("x", {1, 4}).output("y");
  b.node("Add", {"x", "nowhere"}, {"y"}, "add_ghost");
  expect_import_error(b.import(), StatusCode::kInvalidArgument, "add_ghost");
}

TEST(OnnxImporter, UsedSecondOutputIsRefused) {
  ModelBuilder b;
  b.input("x", {1, 1, 4, 4}).output("y");
  NodeProto* pool = b.node("MaxPool", {"x"}, {"y", "indices"}, "pool_with_indices");
  ModelBuilder::ints(pool, "kernel_shape", {2, 2});
  expect_import_error(b.import(), StatusCode::kUnimplemented, "pool_with_indices");
}

}  // namespace
}  // namespace tessera
