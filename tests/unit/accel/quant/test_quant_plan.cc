// The int8 compiler's parts on small graphs built here: the multiplier/shift pairs, per-channel
// weights, BatchNorm folding, the fabric/host split with fusion, and the compiled descriptors.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "accel/graph/passes.h"
#include "accel/host/reference_executor.h"
#include "accel/plan/compiler.h"
#include "accel/plan/partition.h"
#include "accel/quant/calibration.h"
#include "accel/quant/quantize.h"
#include "kernels/kernel_abi.h"

namespace tessera {
namespace {

Tensor random_tensor(Shape shape, uint32_t seed, float scale = 1.0f) {
  Tensor t(std::move(shape));
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  for (float& v : t.data) v = dist(rng);
  return t;
}

TEST(QuantizeMultiplier, RepresentsTheRealWithA31BitMantissa) {
  for (double real : {0.75, 0.5, 0.0123, 3.0e-4, 1.7, 123.456, 1.0 / 3.0}) {
    const auto m = quant::quantize_multiplier(real);
    EXPECT_GE(m.multiplier, 1 << 30) << real;
    EXPECT_GE(m.shift, abi::kMinShift);
    EXPECT_LE(m.shift, abi::kMaxShift);
    const double back = std::ldexp(static_cast<double>(m.multiplier), -m.shift);
    EXPECT_NEAR(back / real, 1.0, 1e-9) << real;
  }
}

TEST(QuantizeMultiplier, ExtremesStayInTheAbiRange) {
  const auto tiny = quant::quantize_multiplier(1e-30);
  EXPECT_EQ(tiny.shift, abi::kMaxShift);
  EXPECT_EQ(tiny.multiplier, 0);  // 1e-30 x 2^kMaxShift rounds to nothing
  // Below 2^-(kMaxShift - 31) the mantissa loses bits but still stands for the real, within one
  // unit of the last place the shift allows.
  for (int e = abi::kMaxShift - 31; e < abi::kMaxShift + 40; e += 7) {
    const double real = 0.7 * std::ldexp(1.0, -e);
    const auto m = quant::quantize_multiplier(real);
    EXPECT_EQ(m.shift, abi::kMaxShift) << real;
    EXPECT_NEAR(std::ldexp(static_cast<double>(m.multiplier), -m.shift), real, std::ldexp(1.0, -abi::kMaxShift)) << e;
  }
  const auto zero = quant::quantize_multiplier(0.0);
  EXPECT_EQ(zero.multiplier, 0);
  const auto huge = quant::quantize_multiplier(1e12);
  EXPECT_EQ(huge.shift, abi::kMinShift);
  EXPECT_EQ(huge.multiplier, INT32_MAX);
}

TEST(QuantizePerChannel, MaxMagnitudeMapsTo127PerChannel) {
  Tensor w({2, 1, 1, 3}, {0.5f, -1.0f, 0.25f, 10.0f, 5.0f, -2.5f});
  const auto q = quant::quantize_per_channel(w);
  ASSERT_EQ(q.scales.size(), 2u);
  EXPECT_FLOAT_EQ(q.scales[0], 1.0f / 127.0f);
  EXPECT_FLOAT_EQ(q.scales[1], 10.0f / 127.0f);
  EXPECT_EQ(q.values, (std::vector<int8_t>{64, -127, 32, 127, 64, -32}));
  EXPECT_EQ(quant::quantize_value(1000.0f, 1.0f), 127);
  EXPECT_EQ(quant::quantize_value(-1000.0f, 1.0f), -128);
  EXPECT_EQ(quant::quantize_value(2.5f, 1.0f), 2);  // round half to even, as nearbyint does
}

// input [N,3,12,12] -> conv 3x3 (8) -> BN -> relu -> maxpool 2 -> conv 3x3 (16) -> relu
// -> global avg pool -> flatten -> gemm (5)
Graph small_bn_cnn() {
  Graph g;
  g.name = "small";
  g.inputs = {{"x", {-1, 3, 12, 12}}};
  g.outputs = {{"logits", {-1, 5}}};
  g.constants["w1"] = random_tensor({8, 3, 3, 3}, 1, 0.3f);
  g.constants["b1"] = random_tensor({8}, 2, 0.1f);
  g.constants["bn_s"] = random_tensor({8}, 3, 0.2f);
  for (float& v : g.constants["bn_s"].data) v += 1.0f;
  g.constants["bn_b"] = random_tensor({8}, 4, 0.1f);
  g.constants["bn_m"] = random_tensor({8}, 5, 0.1f);
  g.constants["bn_v"] = Tensor({8}, std::vector<float>(8, 0.8f));
  g.constants["w2"] = random_tensor({16, 8, 3, 3}, 6, 0.2f);
  g.constants["fc_w"] = random_tensor({5, 16}, 7, 0.3f);
  g.constants["fc_b"] = random_tensor({5}, 8, 0.1f);
  ConvAttrs conv;
  conv.kernel = {3, 3};
  conv.pads = {1, 1, 1, 1};
  PoolAttrs pool;
  pool.kernel = {2, 2};
  pool.stride = {2, 2};
  GemmAttrs gemm;
  gemm.trans_b = true;
  g.nodes = {
      {"conv1", OpKind::kConv, {"x", "w1", "b1"}, {"c1"}, conv},
      {"bn1", OpKind::kBatchNorm, {"c1", "bn_s", "bn_b", "bn_m", "bn_v"}, {"n1"}, BatchNormAttrs{}},
      {"relu1", OpKind::kRelu, {"n1"}, {"r1"}, {}},
      {"pool1", OpKind::kMaxPool, {"r1"}, {"p1"}, pool},
      {"conv2", OpKind::kConv, {"p1", "w2"}, {"c2"}, conv},
      {"relu2", OpKind::kRelu, {"c2"}, {"r2"}, {}},
      {"gap", OpKind::kGlobalAveragePool, {"r2"}, {"g"}, {}},
      {"flatten", OpKind::kFlatten, {"g"}, {"f"}, AxisAttrs{1}},
      {"fc", OpKind::kGemm, {"f", "fc_w", "fc_b"}, {"logits"}, gemm},
  };
  return g;
}

TEST(FoldBatchNorm, KeepsTheFloatResult) {
  const Graph g = small_bn_cnn();
  Graph folded = g;
  auto count = fold_batch_norm(folded);
  ASSERT_TRUE(count.is_ok()) << count.status().to_string();
  EXPECT_EQ(*count, 1);
  EXPECT_EQ(folded.nodes.size(), g.nodes.size() - 1);
  EXPECT_EQ(folded.constant("bn_s"), nullptr);  // unused constants are dropped
  const Tensor x = random_tensor({2, 3, 12, 12}, 9);
  auto a = host::run_reference(g, {{"x", x}});
  auto b = host::run_reference(folded, {{"x", x}});
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  const auto& ya = a->at("logits").data;
  const auto& yb = b->at("logits").data;
  for (size_t i = 0; i < ya.size(); ++i) EXPECT_NEAR(ya[i], yb[i], 1e-4f);
}

TEST(Partition, ConvsWithFusedReluAndPoolOnTheFabricFcOnTheHost) {
  Graph g = small_bn_cnn();
  ASSERT_TRUE(fold_batch_norm(g).is_ok());
  auto shapes = infer_shapes(g, 1);
  ASSERT_TRUE(shapes.is_ok());
  auto p = plan::partition_graph(g, *shapes);
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  ASSERT_EQ(p->segments.size(), 2u);
  ASSERT_TRUE(p->segments[0].fabric);
  const auto& layers = p->segments[0].layers;
  ASSERT_EQ(layers.size(), 3u);
  EXPECT_EQ(layers[0].op, plan::FabricOp::kConv);
  EXPECT_TRUE(layers[0].relu);
  EXPECT_TRUE(layers[0].fused_pool);
  EXPECT_EQ(layers[0].output, "p1");
  EXPECT_TRUE(layers[1].relu);
  EXPECT_FALSE(layers[1].fused_pool);
  EXPECT_EQ(layers[2].op, plan::FabricOp::kAveragePool);
  EXPECT_EQ(p->segments[0].input, "x");
  EXPECT_EQ(p->segments[0].output, "g");
  EXPECT_EQ(p->handovers(), 0u);
  ASSERT_FALSE(p->segments[1].fabric);
  ASSERT_EQ(p->segments[1].host_nodes.size(), 2u);
  EXPECT_EQ(g.nodes[p->segments[1].host_nodes[0]].op, OpKind::kFlatten);
}

TEST(Compiler, DescriptorsFitTheFabricAndCarryTheActivation) {
  Graph g = small_bn_cnn();
  ASSERT_TRUE(fold_batch_norm(g).is_ok());
  auto ranges = quant::calibrate_ranges(g, {random_tensor({4, 3, 12, 12}, 10)}, {});
  ASSERT_TRUE(ranges.is_ok()) << ranges.status().to_string();
  auto board = plan::load_board_profile("zcu102");
  ASSERT_TRUE(board.is_ok()) << board.status().to_string();
  plan::CompileOptions options;
  options.board = *board;
  auto compiled = plan::compile_model(g, *ranges, options);
  ASSERT_TRUE(compiled.is_ok()) << compiled.status().to_string();
  ASSERT_TRUE(compiled->has_fabric);
  ASSERT_EQ(compiled->segments.size(), 2u);
  const CompiledProgram& prog = compiled->segments[0].program;
  const Graph& host_graph = compiled->segments[1].graph;
  ASSERT_EQ(prog.layers.size(), 3u);
  for (const abi::LayerDesc& d : prog.layers) EXPECT_TRUE(abi::layer_fits(d));
  const abi::LayerDesc& conv1 = prog.layers[0];
  EXPECT_EQ(conv1.op, abi::kOpConv);
  EXPECT_EQ(conv1.act_lo, 0);
  EXPECT_EQ(conv1.act_hi, 127);
  EXPECT_EQ(conv1.pool_kind, abi::kPoolMax);
  EXPECT_EQ(conv1.conv_h, 12u);
  EXPECT_EQ(conv1.out_h, 6u);
  EXPECT_EQ(prog.layers[2].op, abi::kOpPool);
  EXPECT_EQ(prog.layers[2].pool_kind, abi::kPoolAverage);
  EXPECT_EQ(prog.input_c, 3u);
  EXPECT_EQ(prog.output_c, 16u);
  EXPECT_EQ(prog.output_h, 1u);
  EXPECT_GE(prog.weights.size(), 8u * 27 + 16u * 72);
  // Every tensor lies inside the per-image arena.
  for (const abi::LayerDesc& d : prog.layers) {
    EXPECT_LE(d.out_offset + d.out_channels_total * d.out_h * d.out_w, prog.header.arena_image_bytes);
  }
  EXPECT_EQ(host_graph.inputs[0].name, "g");
  EXPECT_EQ(host_graph.nodes.size(), 2u);
  // The descriptors carry the plan's tiles, and the program its modeled cost per layer.
  ASSERT_EQ(compiled->plan.layers.size(), prog.layers.size());
  ASSERT_EQ(prog.model.layers.size(), prog.layers.size());
  EXPECT_EQ(prog.model.board, "zcu102");
  for (size_t i = 0; i < prog.layers.size(); ++i) {
    const plan::TileShape& t = compiled->plan.layers[i].candidate.tile;
    EXPECT_EQ(prog.layers[i].tile_m, t.m);
    EXPECT_EQ(prog.layers[i].tile_r, t.r);
    EXPECT_GT(prog.model.layers[i].cycles, 0u);
    EXPECT_GT(prog.model.layers[i].ddr_bytes, 0u);
  }
  EXPECT_EQ(prog.model.cycles(4), 4 * prog.model.cycles(1));
}

TEST(Compiler, TileRuleRespectsTheOnChipBudgetForLargeLayers) {
  abi::LayerDesc d{};
  d.op = abi::kOpConv;
  d.in_c = 512;
  d.in_h = d.in_w = 56;
  d.in_channels_total = 512;
  d.out_c = 512;
  d.out_h = d.out_w = d.conv_h = d.conv_w = 56;
  d.out_channels_total = 512;
  d.kernel_h = d.kernel_w = 3;
  d.stride_h = d.stride_w = d.dilation_h = d.dilation_w = 1;
  d.pad_top = d.pad_left = 1;
  d.groups = 1;
  d.act_lo = -128;
  d.act_hi = 127;
  ASSERT_TRUE(plan::choose_tiles(d).is_ok());
  EXPECT_TRUE(abi::layer_fits(d));
  EXPECT_LE(uint64_t{d.tile_m} * d.tile_n * 9, abi::kWeightBufferBytes);

  d.groups = 512;  // depthwise
  d.tile_m = d.tile_n = d.tile_r = d.tile_c = 0;
  ASSERT_TRUE(plan::choose_tiles(d).is_ok());
  EXPECT_TRUE(abi::layer_fits(d));
  EXPECT_EQ(d.tile_n, 1u);
}

}  // namespace
}  // namespace tessera
