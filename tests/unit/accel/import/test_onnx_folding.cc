// The importer's load-time work on the families' graphs: shape arithmetic folded (Shape, Gather,
// Unsqueeze, Concat, Range, Where, Expand, ConstantOfShape, Cast, Slice, ScatterND), every node's
// shape inferred, the LayerNorm and GELU chains fused, opset 18's axes operands, Split into
// Slices, and clear errors for malformed nodes and for what is still missing.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "accel/host/reference_executor.h"
#include "accel/import/onnx/onnx_importer.h"
#include "tests/unit/accel/import/onnx_model_builder.h"

namespace tessera {
namespace {

using tessera::onnx::AttributeProto;
using tessera::onnx::NodeProto;
using tessera::onnx::TensorProto;
using testing::expect_import_error;
using testing::ModelBuilder;

TensorProto* int64_constant(ModelBuilder& b, const std::string& name, const std::vector<int64_t>& dims,
                            const std::vector<int64_t>& values) {
  NodeProto* c = b.node("Constant", {}, {name});
  AttributeProto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(AttributeProto::TENSOR);
  TensorProto* t = a->mutable_t();
  t->set_data_type(TensorProto::INT64);
  for (int64_t d : dims) t->add_dims(d);
  for (int64_t v : values) t->add_int64_data(v);
  return t;
}

Tensor run_one(const Graph& graph, const Tensor& x) {
  auto out = host::run_reference(graph, {{graph.inputs[0].name, x}});
  EXPECT_TRUE(out.is_ok()) << out.status().to_string();
  return out.is_ok() ? out->at(graph.outputs[0].name) : Tensor();
}

// ShuffleNet's channel shuffle as torch exports it: the reshape targets are computed from
// Shape(x) at run time in the file; at load they fold, and the batch dim is rewritten to "copy".
TEST(OnnxFolding, ShapeArithmeticFoldsIntoReshapeTargets) {
  ModelBuilder b;
  b.static_batch().input("x", {1, 4, 2, 2}).output("y");
  b.node("Shape", {"x"}, {"shape"});
  int64_constant(b, "zero", {}, {0});
  int64_constant(b, "two", {1}, {2});
  int64_constant(b, "minus_one", {1}, {-1});
  ModelBuilder::integer(b.node("Gather", {"shape", "zero"}, {"n"}), "axis", 0);
  int64_constant(b, "axes0", {1}, {0});
  b.node("Unsqueeze", {"n", "axes0"}, {"n1"});
  NodeProto* cat = b.node("Concat", {"n1", "two", "two", "minus_one"}, {"target"});
  ModelBuilder::integer(cat, "axis", 0);
  b.node("Reshape", {"x", "target"}, {"grouped"});
  NodeProto* t = b.node("Transpose", {"grouped"}, {"shuffled"});
  ModelBuilder::ints(t, "perm", {0, 2, 1, 3});
  int64_constant(b, "back", {4}, {1, 4, 2, 2});
  b.node("Reshape", {"shuffled", "back"}, {"y"});
  auto graph = b.import();
  ASSERT_TRUE(graph.is_ok()) << graph.status().to_string();
  ASSERT_EQ(graph->nodes.size(), 3u);
  EXPECT_EQ(graph->nodes[0].op, OpKind::kReshape);
  EXPECT_EQ(std::get<ReshapeAttrs>(graph->nodes[0].attrs).shape, (Shape{0, 2, 2, -1}));
  EXPECT_EQ(std::get<ReshapeAttrs>(graph->nodes[2].attrs).shape, (Shape{0, 4, 2, 2}));
  EXPECT_TRUE(graph->constants.empty());  // the shape values are read by no node at run time
  // Batch 2 of a batch-1 export: channel c of the result is channel (c % 2) * 2 + c / 2.
  Tensor x(Shape{2, 4, 2, 2});
  for (size_t i = 0; i < x.data.size(); ++i) x.data[i] = static_cast<float>(i);
  const Tensor y = run_one(*graph, x);
  ASSERT_EQ(y.shape, x.shape);
  for (int n = 0; n < 2; ++n) {
    for (int c = 0; c < 4; ++c) {
      const int from = (c % 2) * 2 + c / 2;
      EXPECT_EQ(y.data[(n * 4 + c) * 4], x.data[(n * 4 + from) * 4]) << n << " " << c;
    }
  }
}

// ViT's class token: a batch-1 export folds its Expand to [1, 1, D]; concatenated with the
// tokens of a batch of 2 it repeats per image.
TEST(OnnxFolding, BatchOfOneConstantsInConcatRepeatAlongTheBatch) {
  ModelBuilder b;
  b.static_batch().input("x", {1, 2, 3}).output("y");
  b.initializer("token", {1, 1, 3}, {7, 8, 9});
  ModelBuilder::integer(b.node("Concat", {"token", "x"}, {"y"}), "axis", 1);
  auto graph = b.import();
  ASSERT_TRUE(graph.is_ok()) << graph.status().to_string();
  EXPECT_TRUE(std::get<AxisAttrs>(graph->nodes[0].attrs).broadcast_batch);
  Tensor x(Shape{2, 2, 3});
  for (size_t i = 0; i < x.data.size(); ++i) x.data[i] = static_cast<float>(i);
  const Tensor y = run_one(*graph, x);
  ASSERT_EQ(y.shape, (Shape{2, 3, 3}));
  EXPECT_EQ(y.data, (std::vector<float>{7, 8, 9, 0, 1, 2, 3, 4, 5, 7, 8, 9, 6, 7, 8, 9, 10, 11}));
}

// Constant-only subgraphs of every foldable kind become one constant operand.
TEST(OnnxFolding, RangeWhereExpandConstantOfShapeCastSliceScatterFold) {
  ModelBuilder b;
  b.static_batch().input("x", {1, 3}).output("y");
  int64_constant(b, "start", {}, {0});
  int64_constant(b, "limit", {}, {3});
  int64_constant(b, "delta", {}, {1});
  b.node("Range", {"start", "limit", "delta"}, {"r"});  // [0, 1, 2]
  int64_constant(b, "one", {}, {1});
  b.node("Equal", {"r", "one"}, {"is_one"});  // [0, 1, 0]
  int64_constant(b, "shape13", {2}, {1, 3});
  NodeProto* cos = b.node("ConstantOfShape", {"shape13"}, {"sevens"});
  AttributeProto* v = cos->add_attribute();
  v->set_name("value");
  v->set_type(AttributeProto::TENSOR);
  v->mutable_t()->set_data_type(TensorProto::FLOAT);
  v->mutable_t()->add_dims(1);
  v->mutable_t()->add_float_data(7.0f);
  NodeProto* cast = b.node("Cast", {"r"}, {"rf"});
  ModelBuilder::integer(cast, "to", TensorProto::FLOAT);
  b.node("Where", {"is_one", "sevens", "rf"}, {"w"});  // [[0, 7, 2]]
  b.node("Expand", {"w", "shape13"}, {"e"});
  int64_constant(b, "s0", {1}, {1});
  int64_constant(b, "s1", {1}, {100});
  int64_constant(b, "ax", {1}, {1});
  b.node("Slice", {"e", "s0", "s1", "ax"}, {"tail"});  // [[7, 2]]
  int64_constant(b, "idx", {1, 2}, {0, 1});
  b.initializer("upd", {1}, {5.0f});
  b.node("ScatterND", {"tail", "idx", "upd"}, {"scattered"});  // [[7, 5]]
  b.node("Concat", {"scattered", "sevens"}, {"c"});            // axis attribute below
  ModelBuilder::integer(b.proto().mutable_graph()->mutable_node(b.proto().graph().node_size() - 1), "axis", 1);
  int64_constant(b, "s2", {1}, {0});
  int64_constant(b, "s3", {1}, {3});
  b.node("Slice", {"c", "s2", "s3", "ax"}, {"bias"});  // [[7, 5, 7]]
  b.node("Add", {"x", "bias"}, {"y"});
  auto graph = b.import();
  ASSERT_TRUE(graph.is_ok()) << graph.status().to_string();
  ASSERT_EQ(graph->nodes.size(), 1u);
  const Tensor* bias = graph->constant("bias");
  ASSERT_NE(bias, nullptr);
  EXPECT_EQ(bias->shape, (Shape{1, 3}));
  EXPECT_EQ(bias->data, (std::vector<float>{7, 5, 7}));
}

TEST(OnnxFolding, ShapeOfADynamicBatchIsAClearError) {
  ModelBuilder b;  // dim 0 dynamic
  b.input("x", {1, 4}).output("y");
  b.node("Shape", {"x"}, {"s"}, "shape_of_x");
  b.node("Reshape", {"x", "s"}, {"y"});
  expect_import_error(b.import(), StatusCode::kUnimplemented, "node 'shape_of_x' (Shape)");
  expect_import_error(b.import(), StatusCode::kUnimplemented, "static input shape");
}

// The opset-13 LayerNorm chain becomes one LayerNormalization with the scale and bias, and
// computes what the chain computes.
TEST(OnnxFolding, LayerNormChainIsFused) {
  ModelBuilder b;
  b.static_batch().input("x", {1, 3, 4}).output("y");
  b.initializer("two", {}, {2.0f});
  b.initializer("eps", {}, {1e-5f});
  b.initializer("gamma", {4}, {1.0f, 2.0f, 0.5f, -1.0f});
  b.initializer("beta", {4}, {0.1f, 0.2f, 0.3f, 0.4f});
  ModelBuilder::ints(b.node("ReduceMean", {"x"}, {"mean"}, "ln_mean"), "axes", {-1});
  b.node("Sub", {"x", "mean"}, {"d"});
  b.node("Pow", {"d", "two"}, {"sq"});
  ModelBuilder::ints(b.node("ReduceMean", {"sq"}, {"var"}), "axes", {-1});
  b.node("Add", {"var", "eps"}, {"ve"});
  b.node("Sqrt", {"ve"}, {"sd"});
  b.node("Div", {"d", "sd"}, {"n"});
  b.node("Mul", {"n", "gamma"}, {"g"});
  b.node("Add", {"g", "beta"}, {"y"});
  auto graph = b.import();
  ASSERT_TRUE(graph.is_ok()) << graph.status().to_string();
  ASSERT_EQ(graph->nodes.size(), 1u);
  const Node& ln = graph->nodes[0];
  EXPECT_EQ(ln.op, OpKind::kLayerNorm);
  EXPECT_EQ(ln.inputs, (std::vector<std::string>{"x", "gamma", "beta"}));
  EXPECT_EQ(std::get<LayerNormAttrs>(ln.attrs).axis, 2);
  EXPECT_FLOAT_EQ(std::get<LayerNormAttrs>(ln.attrs).epsilon, 1e-5f);
  std::mt19937 rng(1);
  std::normal_distribution<float> dist;
  Tensor x(Shape{2, 3, 4});
  for (float& v : x.data) v = dist(rng);
  const Tensor y = run_one(*graph, x);
  ASSERT_EQ(y.shape, x.shape);
  const float gamma[4] = {1.0f, 2.0f, 0.5f, -1.0f}, beta[4] = {0.1f, 0.2f, 0.3f, 0.4f};
  for (int r = 0; r < 6; ++r) {
    double mean = 0, var = 0;
    for (int k = 0; k < 4; ++k) mean += x.data[r * 4 + k] / 4.0;
    for (int k = 0; k < 4; ++k) var += std::pow(x.data[r * 4 + k] - mean, 2) / 4.0;
    for (int k = 0; k < 4; ++k) {
      EXPECT_NEAR(y.data[r * 4 + k], (x.data[r * 4 + k] - mean) / std::sqrt(var + 1e-5) * gamma[k] + beta[k], 1e-5);
    }
  }
}

// A chain whose centred values are read elsewhere is not fused, and still runs.
TEST(OnnxFolding, LayerNormChainWithAnOutsideReaderRunsUnfused) {
  ModelBuilder b;
  b.static_batch().input("x", {1, 4}).output("y");
  b.initializer("two", {}, {2.0f});
  b.initializer("eps", {}, {1e-5f});
  ModelBuilder::ints(b.node("ReduceMean", {"x"}, {"mean"}), "axes", {1});
  b.node("Sub", {"x", "mean"}, {"d"});
  b.node("Pow", {"d", "two"}, {"sq"});
  ModelBuilder::ints(b.node("ReduceMean", {"sq"}, {"var"}), "axes", {1});
  b.node("Add", {"var", "eps"}, {"ve"});
  b.node("Sqrt", {"ve"}, {"sd"});
  b.node("Div", {"d", "sd"}, {"n"});
  b.node("Add", {"n", "d"}, {"y"});  // d read a third time
  auto graph = b.import();
  ASSERT_TRUE(graph.is_ok()) << graph.status().to_string();
  EXPECT_EQ(graph->nodes.size(), 8u);
  const Tensor y = run_one(*graph, Tensor(Shape{1, 4}, {1, 2, 3, 4}));
  const double sd = std::sqrt(1.25 + 1e-5);
  EXPECT_NEAR(y.data[0], -1.5 / sd - 1.5, 1e-5);
  EXPECT_NEAR(y.data[3], 1.5 / sd + 1.5, 1e-5);
}

TEST(OnnxFolding, GeluErfChainIsFused) {
  ModelBuilder b;
  b.static_batch().input("x", {1, 5}).output("y");
  b.initializer("sqrt2", {}, {1.41421356f});
  b.initializer("one", {}, {1.0f});
  b.initializer("half", {}, {0.5f});
  b.node("Div", {"x", "sqrt2"}, {"s"});
  b.node("Erf", {"s"}, {"e"});
  b.node("Add", {"e", "one"}, {"e1"});
  b.node("Mul", {"x", "e1"}, {"m"});
  b.node("Mul", {"m", "half"}, {"y"});
  auto graph = b.import();
  ASSERT_TRUE(graph.is_ok()) << graph.status().to_string();
  ASSERT_EQ(graph->nodes.size(), 1u);
  EXPECT_EQ(graph->nodes[0].op, OpKind::kGelu);
  const Tensor y = run_one(*graph, Tensor(Shape{1, 5}, {-2, -0.5f, 0, 0.5f, 2}));
  for (size_t i = 0; i < 5; ++i) {
    const double v = std::vector<double>{-2, -0.5, 0, 0.5, 2}[i];
    EXPECT_NEAR(y.data[i], 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))), 1e-6);
  }
}

TEST(OnnxFolding, LayerNormalizationIsOneOpAtOpset17) {
  ModelBuilder b(17);
  b.static_batch().input("x", {1, 2, 4}).output("y");
  b.initializer("gamma", {4}, {1, 1, 1, 1});
  NodeProto* ln = b.node("LayerNormalization", {"x", "gamma"}, {"y"});
  ModelBuilder::real(ln, "epsilon", 1e-6f);
  auto graph = b.import();
  ASSERT_TRUE(graph.is_ok()) << graph.status().to_string();
  EXPECT_EQ(graph->nodes[0].op, OpKind::kLayerNorm);
  EXPECT_FLOAT_EQ(std::get<LayerNormAttrs>(graph->nodes[0].attrs).epsilon, 1e-6f);
  // At opset 13 the operator does not exist yet.
  ModelBuilder old(13);
  old.static_batch().input("x", {1, 2, 4}).output("y");
  old.initializer("gamma", {4}, {1, 1, 1, 1});
  old.node("LayerNormalization", {"x", "gamma"}, {"y"}, "early_ln");
  expect_import_error(old.import(), StatusCode::kUnimplemented, "node 'early_ln' (LayerNormalization)");
}

// Opset 18: ReduceMean's axes are an operand; Pad's axes too.
TEST(OnnxFolding, Opset18AxesOperands) {
  ModelBuilder b(18);
  b.static_batch().input("x", {1, 2, 3, 3}).output("y");
  b.int64_initializer("axes", {2, 3});
  NodeProto* mean = b.node("ReduceMean", {"x", "axes"}, {"m"});
  ModelBuilder::integer(mean, "keepdims", 1);
  b.int64_initializer("pads", {1, 0});
  b.int64_initializer("pad_axes", {1});
  b.node("Pad", {"m", "pads", "", "pad_axes"}, {"y"});
  auto graph = b.import();
  ASSERT_TRUE(graph.is_ok()) << graph.status().to_string();
  EXPECT_EQ(std::get<ReduceAttrs>(graph->nodes[0].attrs).axes, (std::vector<int>{2, 3}));
  EXPECT_EQ(std::get<PadAttrs>(graph->nodes[1].attrs).pads, (std::vector<int64_t>{0, 1, 0, 0, 0, 0, 0, 0}));
  Tensor x(Shape{1, 2, 3, 3});
  for (size_t i = 0; i < 9; ++i) x.data[i] = 1.0f, x.data[9 + i] = static_cast<float>(i);
  const Tensor y = run_one(*graph, x);
  EXPECT_EQ(y.shape, (Shape{1, 3, 1, 1}));
  EXPECT_EQ(y.data, (std::vector<float>{0, 1, 4}));
}

TEST(OnnxFolding, SplitBecomesSlices) {
  ModelBuilder b;
  b.static_batch().input("x", {1, 6}).output("b");
  b.int64_initializer("sizes", {2, 4});
  ModelBuilder::integer(b.node("Split", {"x", "sizes"}, {"a", "b"}, "halves"), "axis", 1);
  auto graph = b.import();
  ASSERT_TRUE(graph.is_ok()) << graph.status().to_string();
  ASSERT_EQ(graph->nodes.size(), 2u);
  EXPECT_EQ(graph->nodes[1].op, OpKind::kSlice);
  const Tensor y = run_one(*graph, Tensor(Shape{1, 6}, {0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(y.data, (std::vector<float>{2, 3, 4, 5}));
  ModelBuilder bad;
  bad.static_batch().input("x", {1, 6}).output("b");
  bad.int64_initializer("sizes", {2, 5});
  ModelBuilder::integer(bad.node("Split", {"x", "sizes"}, {"a", "b"}, "uneven"), "axis", 1);
  expect_import_error(bad.import(), StatusCode::kInvalidArgument, "node 'uneven' (Split)");
}

// Malformed nodes: the error names the node and what is wrong, at load.
TEST(OnnxFolding, MalformedNodesAreRefusedAtLoad) {
  {
    ModelBuilder b;
    b.static_batch().input("x", {1, 2, 3}).output("y");
    ModelBuilder::ints(b.node("Transpose", {"x"}, {"y"}, "short_perm"), "perm", {0, 1});
    expect_import_error(b.import(), StatusCode::kInvalidArgument, "node 'short_perm' (Transpose): perm has 2 entries");
  }
  {
    ModelBuilder b;
    b.static_batch().input("x", {1, 2, 3}).output("y");
    ModelBuilder::ints(b.node("ReduceMean", {"x"}, {"y"}, "far_axis"), "axes", {5});
    expect_import_error(b.import(), StatusCode::kInvalidArgument,
                        "node 'far_axis' (ReduceMean): axis 5 is out of range");
  }
  {
    ModelBuilder b;
    b.static_batch().input("x", {1, 2, 3}).output("y");
    b.int64_initializer("idx", {7});
    b.node("Gather", {"x", "idx"}, {"y"}, "past_end");
    expect_import_error(b.import(), StatusCode::kInvalidArgument, "node 'past_end' (Gather): index 7 is out of range");
  }
  {
    ModelBuilder b;
    b.static_batch().input("x", {1, 2, 3}).output("y");
    b.int64_initializer("pads", {1, 1});
    b.node("Pad", {"x", "pads"}, {"y"}, "few_pads");
    expect_import_error(b.import(), StatusCode::kInvalidArgument, "node 'few_pads' (Pad): pads has 2 entries");
  }
  {
    ModelBuilder b;
    b.static_batch().input("x", {1, 2, 3}).output("y");
    b.int64_initializer("pads", {0, 0, 1, 0, 0, 1});
    NodeProto* p = b.node("Pad", {"x", "pads"}, {"y"}, "mirror");
    AttributeProto* a = p->add_attribute();
    a->set_name("mode");
    a->set_type(AttributeProto::STRING);
    a->set_s("reflect");
    expect_import_error(b.import(), StatusCode::kUnimplemented, "node 'mirror' (Pad): mode 'reflect'");
  }
  {
    ModelBuilder b(17);
    b.static_batch().input("x", {1, 2, 3}).output("y");
    b.initializer("gamma", {2}, {1, 1});
    b.node("LayerNormalization", {"x", "gamma"}, {"y"}, "bad_scale");
    expect_import_error(b.import(), StatusCode::kInvalidArgument, "node 'bad_scale' (LayerNormalization): scale [2]");
  }
  {
    ModelBuilder b;
    b.static_batch().input("x", {1, 4}).output("y");
    b.node("Add", {"x", "x"}, {"s"});
    b.node("MatMul", {"s", "x"}, {"y"}, "mismatched");
    expect_import_error(b.import(), StatusCode::kInvalidArgument, "node 'mismatched' (MatMul): inner dims differ");
  }
}

TEST(OnnxFolding, MissingOperatorNamesTheNearestRewrite) {
  ModelBuilder b;
  b.static_batch().input("x", {1, 4}).output("y");
  b.node("ReduceSum", {"x"}, {"y"}, "total");
  expect_import_error(b.import(), StatusCode::kUnimplemented,
                      "node 'total' (ReduceSum): operator ReduceSum is not supported");
  expect_import_error(b.import(), StatusCode::kUnimplemented, "nearest supported rewrite: ReduceMean");
}

}  // namespace
}  // namespace tessera
