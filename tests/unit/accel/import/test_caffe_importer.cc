// The Caffe importer on small prototxt strings with weights written here (a caffe::NetParameter
// serialised as a caffemodel): every supported layer type, both layer formats and all input
// forms, run through the float reference executor against values computed by hand; and a clear
// error, naming the layer (or line), for what it must refuse.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "accel/host/reference_executor.h"
#include "accel/import/caffe/caffe_importer.h"
#include "caffe.pb.h"

namespace tessera {
namespace {

// Trained weights, by layer name, serialised like a .caffemodel.
class Weights {
 public:
  Weights& add(const std::string& layer, const std::vector<std::pair<Shape, std::vector<float>>>& blobs,
               bool legacy = false) {
    caffe::LayerParameter* l = net_.add_layer();
    l->set_name(layer);
    for (auto& [shape, data] : blobs) {
      caffe::BlobProto* b = l->add_blobs();
      if (legacy) {
        Shape s(4 - shape.size(), 1);
        s.insert(s.end(), shape.begin(), shape.end());
        b->set_num(static_cast<int32_t>(s[0]));
        b->set_channels(static_cast<int32_t>(s[1]));
        b->set_height(static_cast<int32_t>(s[2]));
        b->set_width(static_cast<int32_t>(s[3]));
      } else {
        for (int64_t d : shape) b->mutable_shape()->add_dim(d);
      }
      for (float v : data) b->add_data(v);
    }
    return *this;
  }
  std::vector<uint8_t> bytes() const {
    const std::string s = net_.SerializeAsString();
    return std::vector<uint8_t>(s.begin(), s.end());
  }

 private:
  caffe::NetParameter net_;
};

Result<Graph> import(const std::string& prototxt, const Weights& weights = Weights()) {
  const auto bytes = weights.bytes();
  return import_caffe(prototxt, bytes);
}

Tensor run(const Graph& graph, const Tensor& input) {
  auto out = host::run_reference(graph, {{graph.inputs[0].name, input}});
  EXPECT_TRUE(out.is_ok()) << out.status().to_string();
  if (!out) return Tensor();
  return out->at(graph.outputs[0].name);
}

std::vector<float> iota(size_t n, float start = 1.0f, float step = 1.0f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + step * static_cast<float>(i);
  return v;
}

void expect_all_near(const std::vector<float>& got, const std::vector<float>& want, float tol = 1e-5f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol * std::max(1.0f, std::fabs(want[i]))) << "at " << i;
}

void expect_error(const Result<Graph>& r, StatusCode code, const std::vector<std::string>& parts) {
  ASSERT_FALSE(r.is_ok()) << "expected an error";
  EXPECT_EQ(r.status().code(), code) << r.status().to_string();
  for (const auto& p : parts) EXPECT_NE(r.status().message().find(p), std::string::npos) << r.status().message();
}

std::string input_layer(const Shape& s) {
  std::string dims;
  for (int64_t d : s) dims += " dim: " + std::to_string(d);
  return "layer { name: 'data' type: 'Input' top: 'data' input_param { shape {" + dims + " } } }\n";
}

const Node* find_node(const Graph& g, OpKind op) {
  for (const Node& n : g.nodes) {
    if (n.op == op) return &n;
  }
  return nullptr;
}

int count_nodes(const Graph& g, OpKind op) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.op == op;
  return n;
}

TEST(CaffeImporter, ConvolutionHWFormsGroupAndBias) {
  const std::string net = input_layer({1, 2, 3, 3}) + R"(
    layer { name: 'conv' type: 'Convolution' bottom: 'data' top: 'conv'
      convolution_param { num_output: 2 group: 2 kernel_h: 3 kernel_w: 1 pad_h: 1 pad_w: 0 stride_h: 2 stride_w: 1 } })";
  // Group 0 sums its channel over 3 rows (weights 1,1,1); group 1 takes the middle row twice.
  Weights w;
  w.add("conv", {{{2, 1, 3, 1}, {1, 1, 1, 0, 2, 0}}, {{2}, {0.5f, -1.0f}}});
  auto g = import(net, w);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  const auto& conv = std::get<ConvAttrs>(find_node(*g, OpKind::kConv)->attrs);
  EXPECT_EQ(conv.kernel, (std::array<int, 2>{3, 1}));
  EXPECT_EQ(conv.stride, (std::array<int, 2>{2, 1}));
  EXPECT_EQ(conv.pads, (std::array<int, 4>{1, 0, 1, 0}));
  EXPECT_EQ(conv.group, 2);
  Tensor y = run(*g, Tensor({1, 2, 3, 3}, iota(18)));
  EXPECT_EQ(y.shape, (Shape{1, 2, 2, 3}));
  // channel 0 (1..9): the sums of input rows (pad, 0, 1) and (1, 2, pad).
  // channel 1 (10..18): 2 * input row 0 and row 2.
  expect_all_near(y.data, {1 + 4 + 0.5f, 2 + 5 + 0.5f, 3 + 6 + 0.5f, 4 + 7 + 0.5f, 5 + 8 + 0.5f, 6 + 9 + 0.5f, 20 - 1,
                           22 - 1, 24 - 1, 32 - 1, 34 - 1, 36 - 1});
}

TEST(CaffeImporter, ConvolutionDilationAndNoBias) {
  const std::string net = input_layer({1, 1, 5, 5}) + R"(
    layer { name: 'conv' type: 'Convolution' bottom: 'data' top: 'conv'
      convolution_param { num_output: 1 kernel_size: 2 dilation: 2 bias_term: false } })";
  Weights w;
  w.add("conv", {{{1, 1, 2, 2}, {1, 0, 0, 1}}});
  auto g = import(net, w);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  EXPECT_EQ(find_node(*g, OpKind::kConv)->inputs.size(), 2u);
  Tensor y = run(*g, Tensor({1, 1, 5, 5}, iota(25)));
  ASSERT_EQ(y.shape, (Shape{1, 1, 3, 3}));
  // x[i][j] + x[i+2][j+2] with x = 5i + j + 1
  EXPECT_FLOAT_EQ(y.data[0], 1 + 13);
  EXPECT_FLOAT_EQ(y.data[8], 13 + 25);
}

TEST(CaffeImporter, PoolingCeilRoundingAveragePaddingAndGlobal) {
  const std::string net = input_layer({1, 1, 6, 6}) + R"(
    layer { name: 'max' type: 'Pooling' bottom: 'data' top: 'max' pooling_param { pool: MAX kernel_size: 3 stride: 2 } }
    layer { name: 'ave' type: 'Pooling' bottom: 'data' top: 'ave' pooling_param { pool: AVE kernel_size: 3 stride: 2 pad: 1 } }
    layer { name: 'gmax' type: 'Pooling' bottom: 'max' top: 'gmax' pooling_param { pool: MAX global_pooling: true } }
    layer { name: 'gave' type: 'Pooling' bottom: 'ave' top: 'gave' pooling_param { pool: AVE global_pooling: true } }
    layer { name: 'cat' type: 'Concat' bottom: 'gmax' bottom: 'gave' top: 'cat' })";
  auto g = import(net);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  auto shapes = infer_shapes(*g, 1);
  ASSERT_TRUE(shapes.is_ok());
  // Caffe rounds up: (6 - 3) / 2 -> 3 windows (floor would give 2); with pad 1: 4, the last
  // starting inside the input.
  EXPECT_EQ(shapes->at("max"), (Shape{1, 1, 3, 3}));
  EXPECT_EQ(shapes->at("ave"), (Shape{1, 1, 4, 4}));
  const auto& ave = std::get<PoolAttrs>(g->nodes[1].attrs);
  EXPECT_TRUE(ave.ceil_mode);
  EXPECT_TRUE(ave.count_include_pad);
  EXPECT_EQ(g->nodes[2].op, OpKind::kMaxPool);
  EXPECT_EQ(std::get<PoolAttrs>(g->nodes[2].attrs).kernel, (std::array<int, 2>{3, 3}));
  EXPECT_EQ(g->nodes[3].op, OpKind::kGlobalAveragePool);
  Tensor y = run(*g, Tensor({1, 1, 6, 6}, iota(36)));
  ASSERT_EQ(y.data.size(), 2u);
  EXPECT_FLOAT_EQ(y.data[0], 36);  // the clipped last window reaches the corner
  // ave[0][0] covers padded rows/cols -1..1: (1+2+7+8) / 9; the global mean of the 4x4 map:
  std::vector<double> ave_map;
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 4; ++c) {
      double sum = 0;
      const int r0 = 2 * r - 1, c0 = 2 * c - 1;
      const int r1 = std::min(r0 + 3, 7), c1 = std::min(c0 + 3, 7);  // clipped to the padded input
      for (int i = std::max(r0, 0); i < std::min(r1, 6); ++i)
        for (int j = std::max(c0, 0); j < std::min(c1, 6); ++j) sum += 6 * i + j + 1;
      ave_map.push_back(sum / ((r1 - r0) * (c1 - c0)));
    }
  }
  double mean = 0;
  for (double v : ave_map) mean += v / 16;
  EXPECT_NEAR(y.data[1], mean, 1e-4);
}

TEST(CaffeImporter, PoolingFloorRoundingBothSpellings) {
  for (const char* option : {"round_mode: FLOOR", "ceil_mode: false"}) {
    const std::string net = input_layer({1, 1, 7, 7}) +
                            "layer { name: 'p' type: 'Pooling' bottom: 'data' top: 'p' pooling_param { pool: MAX "
                            "kernel_size: 2 stride: 2 " +
                            std::string(option) + " } }";
    auto g = import(net);
    ASSERT_TRUE(g.is_ok()) << g.status().to_string();
    auto shapes = infer_shapes(*g, 1);
    ASSERT_TRUE(shapes.is_ok());
    EXPECT_EQ(shapes->at("p"), (Shape{1, 1, 3, 3})) << option;
  }
  // Caffe's own rule would keep a window starting past the input (stride > kernel, no pad).
  expect_error(
      import(
          input_layer({1, 1, 6, 6}) +
          "layer { name: 'odd' type: 'Pooling' bottom: 'data' top: 'odd' pooling_param { kernel_size: 1 stride: 4 } }"),
      StatusCode::kUnimplemented, {"layer 'odd' (Pooling)", "outside the input"});
}

TEST(CaffeImporter, ReluAndLeakyRelu) {
  const std::string net = input_layer({1, 1, 1, 4}) + R"(
    layer { name: 'relu' type: 'ReLU' bottom: 'data' top: 'a' }
    layer { name: 'leaky' type: 'ReLU' bottom: 'data' top: 'b' relu_param { negative_slope: 0.25 } }
    layer { name: 'cat' type: 'Concat' bottom: 'a' bottom: 'b' top: 'cat' concat_param { axis: 3 } })";
  auto g = import(net);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  Tensor y = run(*g, Tensor({1, 1, 1, 4}, {-4, -1, 0, 3}));
  expect_all_near(y.data, {0, 0, 0, 3, -1, -0.25f, 0, 3});
}

TEST(CaffeImporter, InnerProductPlainTransposedLegacyBlobAndAxis) {
  const std::string net = input_layer({1, 2, 1, 2}) + R"(
    layer { name: 'fc' type: 'InnerProduct' bottom: 'data' top: 'fc' inner_product_param { num_output: 2 } }
    layer { name: 'fct' type: 'InnerProduct' bottom: 'fc' top: 'fct' inner_product_param { num_output: 3 transpose: true bias_term: false } })";
  Weights w;
  w.add("fc", {{{2, 4}, {1, 0, 0, 0, 0, 1, 1, 1}}, {{2}, {10, 20}}}, /*legacy=*/true);
  w.add("fct", {{{2, 3}, {1, 2, 3, 4, 5, 6}}});
  auto g = import(net, w);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  Tensor y = run(*g, Tensor({1, 2, 1, 2}, {1, 2, 3, 4}));
  // fc = [1 + 10, 2 + 3 + 4 + 20] = [11, 29]; fct = fc x [[1,2,3],[4,5,6]]
  expect_all_near(y.data, {11 + 29 * 4, 22 + 29 * 5, 33 + 29 * 6});

  const std::string axis_net = input_layer({1, 2, 1, 3}) + R"(
    layer { name: 'fc' type: 'InnerProduct' bottom: 'data' top: 'fc' inner_product_param { num_output: 1 axis: 2 } })";
  Weights wa;
  wa.add("fc", {{{1, 3}, {1, 1, 1}}, {{1}, {0}}});
  auto ga = import(axis_net, wa);
  ASSERT_TRUE(ga.is_ok()) << ga.status().to_string();
  Tensor ya = run(*ga, Tensor({2, 2, 1, 3}, iota(12)));
  EXPECT_EQ(ya.shape, (Shape{2, 2, 1}));
  expect_all_near(ya.data, {6, 15, 24, 33});
}

TEST(CaffeImporter, LrnAcrossAndWithinChannel) {
  const std::string net = input_layer({1, 3, 3, 3}) + R"(
    layer { name: 'across' type: 'LRN' bottom: 'data' top: 'across' lrn_param { local_size: 3 alpha: 0.3 beta: 0.75 k: 2 } }
    layer { name: 'within' type: 'LRN' bottom: 'data' top: 'within'
            lrn_param { local_size: 3 alpha: 0.9 beta: 0.5 k: 5 norm_region: WITHIN_CHANNEL } }
    layer { name: 'cat' type: 'Concat' bottom: 'across' bottom: 'within' top: 'cat' })";
  auto g = import(net);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  const auto& across = std::get<LrnAttrs>(g->nodes[0].attrs);
  EXPECT_FALSE(across.within_channel);
  EXPECT_FLOAT_EQ(across.bias, 2.0f);
  const std::vector<float> x = iota(27, 0.1f, 0.1f);
  Tensor y = run(*g, Tensor({1, 3, 3, 3}, x));
  ASSERT_EQ(y.data.size(), 54u);
  // across, channel 1, pixel 0: x / (2 + 0.3/3 * (x0^2 + x1^2 + x2^2))^0.75
  const float s = x[0] * x[0] + x[9] * x[9] + x[18] * x[18];
  EXPECT_NEAR(y.data[9], x[9] / std::pow(2.0f + 0.1f * s, 0.75f), 1e-6);
  // within, channel 0, centre pixel (1,1): the 3x3 window is the whole map; corner (0,0): 2x2.
  float all = 0, corner = 0;
  for (int i = 0; i < 9; ++i) all += x[static_cast<size_t>(i)] * x[static_cast<size_t>(i)];
  for (int i : {0, 1, 3, 4}) corner += x[static_cast<size_t>(i)] * x[static_cast<size_t>(i)];
  EXPECT_NEAR(y.data[27 + 4], x[4] / std::pow(1.0f + 0.9f / 9 * all, 0.5f), 1e-6);  // k is not used
  EXPECT_NEAR(y.data[27 + 0], x[0] / std::pow(1.0f + 0.9f / 9 * corner, 0.5f), 1e-6);
}

TEST(CaffeImporter, ConcatAxisAndLegacyConcatDim) {
  const std::string net = input_layer({1, 1, 2, 2}) + R"(
    layer { name: 'c1' type: 'Concat' bottom: 'data' bottom: 'data' top: 'c1' concat_param { axis: -1 } }
    layer { name: 'c2' type: 'Concat' bottom: 'c1' bottom: 'c1' top: 'c2' concat_param { concat_dim: 2 } })";
  auto g = import(net);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  EXPECT_EQ(std::get<AxisAttrs>(g->nodes[0].attrs).axis, 3);
  EXPECT_EQ(std::get<AxisAttrs>(g->nodes[1].attrs).axis, 2);
  Tensor y = run(*g, Tensor({1, 1, 2, 2}, {1, 2, 3, 4}));
  EXPECT_EQ(y.shape, (Shape{1, 1, 4, 4}));
  expect_all_near(y.data, {1, 2, 1, 2, 3, 4, 3, 4, 1, 2, 1, 2, 3, 4, 3, 4});
}

TEST(CaffeImporter, EltwiseSumWithCoeffsProdAndMax) {
  const std::string net = input_layer({1, 3, 1, 1}) + R"(
    layer { name: 'split' type: 'Split' bottom: 'data' top: 'a' top: 'b' }
    layer { name: 'neg' type: 'ReLU' bottom: 'b' top: 'c' relu_param { negative_slope: -1 } }
    layer { name: 'sum' type: 'Eltwise' bottom: 'a' bottom: 'c' bottom: 'a' top: 'sum' eltwise_param { operation: SUM coeff: 1 coeff: -0.5 coeff: 2 } }
    layer { name: 'prod' type: 'Eltwise' bottom: 'a' bottom: 'c' top: 'prod' eltwise_param { operation: PROD } }
    layer { name: 'max' type: 'Eltwise' bottom: 'a' bottom: 'sum' bottom: 'prod' top: 'max' eltwise_param { operation: MAX } }
    layer { name: 'cat' type: 'Concat' bottom: 'sum' bottom: 'prod' bottom: 'max' top: 'out' })";
  auto g = import(net);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  Tensor y = run(*g, Tensor({1, 3, 1, 1}, {-2, 0.5f, 3}));
  // c = |x|; sum = 3x - 0.5|x|; prod = x|x|; max of x, sum, prod
  const std::vector<float> x{-2, 0.5f, 3};
  std::vector<float> want;
  want.reserve(3 * x.size());
  for (float v : x) want.push_back(3 * v - 0.5f * std::fabs(v));
  for (float v : x) want.push_back(v * std::fabs(v));
  for (size_t i = 0; i < 3; ++i) want.push_back(std::max({x[i], want[i], want[3 + i]}));
  expect_all_near(y.data, want);
}

TEST(CaffeImporter, BatchNormAndScaleFoldIntoOneNode) {
  const std::string net = input_layer({1, 2, 1, 1}) + R"(
    layer { name: 'conv' type: 'Convolution' bottom: 'data' top: 'conv' convolution_param { num_output: 2 kernel_size: 1 } }
    layer { name: 'bn' type: 'BatchNorm' bottom: 'conv' top: 'conv' batch_norm_param { eps: 0.001 } }
    layer { name: 'sc' type: 'Scale' bottom: 'conv' top: 'conv' scale_param { bias_term: true } }
    layer { name: 'relu' type: 'ReLU' bottom: 'conv' top: 'conv' })";
  Weights w;
  w.add("conv", {{{2, 2, 1, 1}, {1, 0, 0, 1}}, {{2}, {0, 0}}});
  // Caffe stores sums: mean = blob0 / factor, var = blob1 / factor.
  w.add("bn", {{{2}, {2, -4}}, {{2}, {8, 0.5f}}, {{1}, {2}}});
  w.add("sc", {{{2}, {3, 0.5f}}, {{2}, {1, -1}}});
  auto g = import(net, w);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  EXPECT_EQ(count_nodes(*g, OpKind::kBatchNorm), 1);
  EXPECT_EQ(count_nodes(*g, OpKind::kMul), 0);
  Tensor y = run(*g, Tensor({1, 2, 1, 1}, {5, -1}));
  const float y0 = (5 - 1) / std::sqrt(4 + 0.001f) * 3 + 1;
  const float y1 = (-1 + 2) / std::sqrt(0.25f + 0.001f) * 0.5f - 1;
  expect_all_near(y.data, {std::max(y0, 0.0f), std::max(y1, 0.0f)});
}

TEST(CaffeImporter, StandaloneScaleBroadcastsOverTrailingDims) {
  const std::string net = input_layer({1, 2, 1, 2}) + R"(
    layer { name: 'sc' type: 'Scale' bottom: 'data' top: 'sc' scale_param { bias_term: true } })";
  Weights w;
  w.add("sc", {{{2}, {2, -1}}, {{2}, {0.5f, 1}}});
  auto g = import(net, w);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  expect_all_near(run(*g, Tensor({1, 2, 1, 2}, {1, 2, 3, 4})).data, {2.5f, 4.5f, -2, -3});
}

TEST(CaffeImporter, DropoutSplitAndInPlaceTopsNeedNoNodes) {
  const std::string net = input_layer({1, 2, 1, 1}) + R"(
    layer { name: 'drop' type: 'Dropout' bottom: 'data' top: 'data' dropout_param { dropout_ratio: 0.5 } }
    layer { name: 'split' type: 'Split' bottom: 'data' top: 'x1' top: 'x2' }
    layer { name: 'relu' type: 'ReLU' bottom: 'x1' top: 'x1' }
    layer { name: 'sum' type: 'Eltwise' bottom: 'x1' bottom: 'x2' top: 'sum' })";
  auto g = import(net);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  EXPECT_EQ(g->nodes.size(), 2u);  // Relu and Add
  ASSERT_EQ(g->outputs.size(), 1u);
  expect_all_near(run(*g, Tensor({1, 2, 1, 1}, {-3, 2})).data, {-3, 4});
}

TEST(CaffeImporter, SoftmaxFlattenAndReshape) {
  const std::string net = input_layer({1, 2, 2, 3}) + R"(
    layer { name: 'flat' type: 'Flatten' bottom: 'data' top: 'flat' flatten_param { axis: 2 } }
    layer { name: 'reshape' type: 'Reshape' bottom: 'flat' top: 'reshape' reshape_param { shape { dim: 0 dim: -1 dim: 3 } } }
    layer { name: 'prob' type: 'Softmax' bottom: 'reshape' top: 'prob' softmax_param { axis: 2 } }
    layer { name: 'flat2' type: 'Flatten' bottom: 'prob' top: 'out' })";
  auto g = import(net);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  auto shapes = infer_shapes(*g, 2);
  ASSERT_TRUE(shapes.is_ok()) << shapes.status().to_string();
  EXPECT_EQ(shapes->at("flat"), (Shape{2, 2, 6}));
  EXPECT_EQ(shapes->at("reshape"), (Shape{2, 4, 3}));
  EXPECT_EQ(shapes->at("out"), (Shape{2, 12}));
  Tensor y = run(*g, Tensor({1, 2, 2, 3}, {0, 0, 0, 1, 2, 3, 0, 0, 0, 0, 0, 0}));
  const float e = std::exp(1.0f) + std::exp(2.0f) + std::exp(3.0f);
  expect_all_near(y.data, {1 / 3.f, 1 / 3.f, 1 / 3.f, std::exp(1.0f) / e, std::exp(2.0f) / e, std::exp(3.0f) / e,
                           1 / 3.f, 1 / 3.f, 1 / 3.f, 1 / 3.f, 1 / 3.f, 1 / 3.f});
}

TEST(CaffeImporter, InputForms) {
  const std::string tail = "layer { name: 'relu' type: 'ReLU' bottom: 'data' top: 'out' }";
  for (const std::string& head :
       {std::string("input: 'data' input_dim: 10 input_dim: 3 input_dim: 8 input_dim: 6\n"),
        std::string("input: 'data' input_shape { dim: 1 dim: 3 dim: 8 dim: 6 }\n"), input_layer({1, 3, 8, 6})}) {
    auto g = import(head + tail);
    ASSERT_TRUE(g.is_ok()) << g.status().to_string();
    ASSERT_EQ(g->inputs.size(), 1u);
    EXPECT_EQ(g->inputs[0].shape, (Shape{-1, 3, 8, 6})) << head;  // the batch stays free
  }
}

TEST(CaffeImporter, LegacyV1LayersAndTrainPhaseLayersSkipped) {
  const std::string net = R"(
    name: 'v1'
    input: 'data' input_dim: 1 input_dim: 1 input_dim: 2 input_dim: 2
    layers { name: 'train_data' type: DATA top: 'data' top: 'label' include { phase: TRAIN } }
    layers { name: 'conv' type: CONVOLUTION bottom: 'data' top: 'conv' convolution_param { num_output: 1 kernel_size: 1 } }
    layers { name: 'relu' type: RELU bottom: 'conv' top: 'conv' }
    layers { name: 'fc' type: INNER_PRODUCT bottom: 'conv' top: 'fc' inner_product_param { num_output: 2 } }
    layers { name: 'prob' type: SOFTMAX bottom: 'fc' top: 'prob' })";
  Weights w;
  w.add("conv", {{{1, 1, 1, 1}, {2}}, {{1}, {-1}}}, true);
  w.add("fc", {{{2, 4}, {1, 0, 0, 0, 0, 0, 0, 1}}, {{2}, {0, 0}}}, true);
  auto g = import(net, w);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  Tensor y = run(*g, Tensor({1, 1, 2, 2}, {0, 5, 5, 1}));
  // conv+relu = [0, 9, 9, 1]; fc = [0, 1]; softmax
  expect_all_near(y.data, {1 / (1 + std::exp(1.0f)), std::exp(1.0f) / (1 + std::exp(1.0f))});
}

TEST(CaffeImporter, ErrorsNameTheLayer) {
  const std::string in = input_layer({1, 1, 4, 4});
  expect_error(import(in + "layer { name: 'sig' type: 'Sigmoid' bottom: 'data' top: 'sig' }"),
               StatusCode::kUnimplemented, {"layer 'sig' (Sigmoid)", "not supported"});
  // An unsupported layer's own parameters do not hide that error.
  expect_error(
      import(in + "layer { name: 'pr' type: 'PReLU' bottom: 'data' top: 'pr' prelu_param { channel_shared: true } }"),
      StatusCode::kUnimplemented, {"layer 'pr' (PReLU)"});
  expect_error(import(in + "layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'data' top: 'loss' }"),
               StatusCode::kUnimplemented, {"layer 'loss'", "deploy prototxt"});
  const std::string conv = in +
                           "layer { name: 'conv1' type: 'Convolution' bottom: 'data' top: 'c' convolution_param { "
                           "num_output: 2 kernel_size: 3 } }";
  expect_error(import(conv), StatusCode::kInvalidArgument, {"layer 'conv1' (Convolution)", "no trained weights"});
  Weights wrong;
  wrong.add("conv1", {{{2, 1, 5, 5}, std::vector<float>(50, 0.0f)}, {{2}, {0, 0}}});
  expect_error(import(conv, wrong), StatusCode::kInvalidArgument,
               {"layer 'conv1' (Convolution)", "[2,1,5,5]", "[2,1,3,3]"});
  Weights short_blobs;
  short_blobs.add("conv1", {{{2, 1, 3, 3}, std::vector<float>(18, 0.0f)}});
  expect_error(import(conv, short_blobs), StatusCode::kInvalidArgument, {"layer 'conv1'", "blob 1 (bias) is missing"});
  expect_error(import(in + "layer { name: 'r' type: 'ReLU' bottom: 'nope' top: 'r' }"), StatusCode::kInvalidArgument,
               {"layer 'r' (ReLU)", "bottom 'nope'"});
  expect_error(import(in + "layer { name: 'broken' type: 'ReLU' bottom: 'data' top: 'r'"), StatusCode::kInvalidArgument,
               {"deploy.prototxt:"});
  expect_error(
      import(in + "layer { name: 'p' type: 'Pooling' bottom: 'data' top: 'p' pooling_param { kernal_size: 2 } }"),
      StatusCode::kInvalidArgument, {"deploy.prototxt:", "kernal_size"});
  // ... but a layer the deploy net leaves out may carry settings the schema does not know.
  auto skipped = import(
      "layer { name: 'train' type: 'Data' top: 'data' include { phase: TRAIN }\n"
      "  data_param { source: 'train_lmdb' batch_size: 64 } }\n" +
      in + "layer { name: 'r' type: 'ReLU' bottom: 'data' top: 'r' }");
  EXPECT_TRUE(skipped.is_ok()) << skipped.status().to_string();
  expect_error(import(in + "layer { name: 'p' type: 'Pooling' bottom: 'data' top: 'p' pooling_param { pool: MAX } }"),
               StatusCode::kInvalidArgument, {"layer 'p' (Pooling)", "kernel is required"});
  expect_error(import("layer { name: 'r' type: 'ReLU' bottom: 'x' top: 'y' }"), StatusCode::kInvalidArgument,
               {"bottom 'x'"});
  const std::string junk = "not a protobuf";
  expect_error(import_caffe(in, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(junk.data()), junk.size())),
               StatusCode::kInvalidArgument, {"caffemodel"});
  expect_error(import_caffe_files("/nonexistent/deploy.prototxt", {}), StatusCode::kNotFound,
               {"/nonexistent/deploy.prototxt"});
}

TEST(CaffeImporter, MeanBinaryproto) {
  caffe::BlobProto blob;
  blob.set_num(1);
  blob.set_channels(3);
  blob.set_height(2);
  blob.set_width(1);
  for (float v : {1, 2, 3, 4, 5, 6}) blob.add_data(v);
  const std::string bytes = blob.SerializeAsString();
  auto mean = parse_caffe_mean(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  ASSERT_TRUE(mean.is_ok()) << mean.status().to_string();
  EXPECT_EQ(mean->shape, (Shape{3, 2, 1}));
  EXPECT_EQ(mean->data, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  blob.add_data(7);
  const std::string bad = blob.SerializeAsString();
  auto r = parse_caffe_mean(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bad.data()), bad.size()));
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("holds 7"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace tessera
