// The split into fabric and host segments on graphs built here: a squeeze-and-excitation block
// (its channel scale is a host Mul in the middle of the network) keeps every conv and pool on the
// fabric in segments of one input and one output each; the hand-overs are costed in the plan;
// the placement report counts the MACs on each side and, measured (runtime/host_op_timing.h), each
// host op's time; a partition option naming no node is refused.
#include <gtest/gtest.h>

#include <random>

#include "accel/graph/passes.h"
#include "accel/plan/compiler.h"
#include "accel/plan/partition.h"
#include "accel/plan/placement.h"
#include "accel/runtime/host_op_timing.h"

namespace tessera {
namespace {

Tensor weights(Shape shape, uint32_t seed) {
  Tensor t(std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-0.3f, 0.3f);
  for (float& v : t.data) v = u(rng);
  return t;
}

// `g` compiled for zcu102 with unit ranges (the plan's search on one thread).
Result<plan::CompiledModel> compile_on_zcu102(const Graph& g) {
  plan::CompileOptions options;
  TESSERA_ASSIGN_OR_RETURN(options.board, plan::load_board_profile("zcu102"));
  options.plan.threads = 1;
  return plan::compile_model(g, plan::unit_ranges(g), options);
}

// x [N,3,12,12] -> conv1 (8) + relu -> r; SE: gap(r) -> se1 1x1 (2) + relu -> se2 1x1 (8) -> s;
// m = r * s (host) -> conv3 (16) + relu -> gap -> flatten -> fc (4).
Graph se_net() {
  Graph g;
  g.name = "se";
  g.inputs = {{"x", {-1, 3, 12, 12}}};
  g.outputs = {{"logits", {-1, 4}}};
  g.constants["w1"] = weights({8, 3, 3, 3}, 1);
  g.constants["w_se1"] = weights({2, 8, 1, 1}, 2);
  g.constants["w_se2"] = weights({8, 2, 1, 1}, 3);
  g.constants["w3"] = weights({16, 8, 3, 3}, 4);
  g.constants["fc_w"] = weights({4, 16}, 5);
  ConvAttrs k3;
  k3.kernel = {3, 3};
  k3.pads = {1, 1, 1, 1};
  ConvAttrs k1;
  GemmAttrs gemm;
  gemm.trans_b = true;
  g.nodes = {
      {"conv1", OpKind::kConv, {"x", "w1"}, {"c1"}, k3},
      {"relu1", OpKind::kRelu, {"c1"}, {"r"}, {}},
      {"se_pool", OpKind::kGlobalAveragePool, {"r"}, {"p"}, {}},
      {"se1", OpKind::kConv, {"p", "w_se1"}, {"e1"}, k1},
      {"se1_relu", OpKind::kRelu, {"e1"}, {"e1r"}, {}},
      {"se2", OpKind::kConv, {"e1r", "w_se2"}, {"s"}, k1},
      {"scale", OpKind::kMul, {"r", "s"}, {"m"}, {}},
      {"conv3", OpKind::kConv, {"m", "w3"}, {"c3"}, k3},
      {"relu3", OpKind::kRelu, {"c3"}, {"r3"}, {}},
      {"gap", OpKind::kGlobalAveragePool, {"r3"}, {"g"}, {}},
      {"flatten", OpKind::kFlatten, {"g"}, {"f"}, AxisAttrs{1}},
      {"fc", OpKind::kGemm, {"f", "fc_w"}, {"logits"}, gemm},
  };
  return g;
}

TEST(PartitionSegments, SqueezeExcitationKeepsItsConvsOnTheFabric) {
  const Graph g = se_net();
  auto shapes = infer_shapes(g, 1);
  ASSERT_TRUE(shapes.is_ok()) << shapes.status().to_string();
  auto p = plan::partition_graph(g, *shapes);
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  // conv1 hands r to both the SE branch and the Mul: r alone leaves the first segment, the SE
  // branch is a segment of its own (r in, s out), the Mul is the host's, then conv3 and the pool.
  ASSERT_EQ(p->segments.size(), 5u);
  const auto& s = p->segments;
  EXPECT_TRUE(s[0].fabric && s[1].fabric && !s[2].fabric && s[3].fabric && !s[4].fabric);
  EXPECT_EQ(s[0].input, "x");
  EXPECT_EQ(s[0].output, "r");
  EXPECT_EQ(s[1].input, "r");
  EXPECT_EQ(s[1].output, "s");
  EXPECT_EQ(s[1].layers.size(), 3u);
  ASSERT_EQ(s[2].host_nodes.size(), 1u);
  EXPECT_EQ(g.nodes[s[2].host_nodes[0]].name, "scale");
  EXPECT_EQ(s[3].input, "m");
  EXPECT_EQ(s[3].output, "g");
  EXPECT_EQ(p->fabric_layers(), 6u);
  EXPECT_EQ(p->handovers(), 2u);

  auto compiled = compile_on_zcu102(g);
  ASSERT_TRUE(compiled.is_ok()) << compiled.status().to_string();
  ASSERT_EQ(compiled->fabric_segments(), 3u);
  ASSERT_EQ(compiled->plan.handovers.size(), 2u);
  // The Mul's host graph reads r (from segment 0) and s (from segment 1) and hands m on.
  const Graph& host = compiled->segments[2].graph;
  ASSERT_EQ(host.inputs.size(), 2u);
  EXPECT_EQ(host.inputs[0].name, "r");
  EXPECT_EQ(host.inputs[1].name, "s");
  ASSERT_EQ(host.outputs.size(), 1u);
  EXPECT_EQ(host.outputs[0].name, "m");
  // Segment 0 -> 1 is a fabric -> fabric hand-over of r; 1 -> 3 hands s out and m back in.
  const auto& h = compiled->plan.handovers;
  EXPECT_EQ(h[0].from, "r");
  EXPECT_EQ(h[0].to, "r");
  EXPECT_EQ(h[1].from, "s");
  EXPECT_EQ(h[1].to, "m");
  EXPECT_EQ(h[1].bytes_out, 8u);
  EXPECT_EQ(h[1].bytes_in, 8u * 12 * 12);
  // MACs: conv1 8*27*144, se1 2*8, se2 8*2, conv3 16*72*144 on the fabric; the FC's 4*16 on the host.
  const plan::Placement& pl = compiled->placement;
  EXPECT_EQ(pl.fabric_macs, 8u * 27 * 144 + 16 + 16 + 16u * 72 * 144);
  EXPECT_EQ(pl.host_macs, 64u);
  EXPECT_EQ(pl.handovers, 2u);
  ASSERT_EQ(pl.host_ops.size(), 3u);  // Mul, Flatten, Gemm
  EXPECT_EQ(pl.host_ops[0].op, "Mul");
  EXPECT_TRUE(pl.host_modeled);
  EXPECT_GT(pl.host_ops[0].us, 0.0);
  EXPECT_GT(pl.fabric_us, 0.0);
  const std::string line = pl.line();
  EXPECT_NE(line.find("3 segments, 2 hand-overs; host: Mul scale"), std::string::npos) << line;
}

// The host ops measured on this machine: each gets a time, the load line gives both shares; a board
// without host figures gives the measured share alone; a sample that is no image is refused.
TEST(PartitionSegments, HostOpsAreMeasuredBesideTheModeledTime) {
  const Graph g = se_net();
  auto compiled = compile_on_zcu102(g);
  ASSERT_TRUE(compiled.is_ok()) << compiled.status().to_string();
  plan::Placement pl = compiled->placement;
  EXPECT_FALSE(pl.host_measured);
  EXPECT_EQ(pl.line().find("measured"), std::string::npos) << pl.line();

  ASSERT_TRUE(measure_host_ops(g, weights({2, 3, 12, 12}, 9), pl).is_ok());
  ASSERT_TRUE(pl.host_measured);
  ASSERT_EQ(pl.host_ops.size(), 3u);
  for (const plan::HostOpTime& op : pl.host_ops) {
    EXPECT_EQ(g.nodes[op.index].name, op.node);
    EXPECT_GT(op.measured_us, 0.0) << op.node;
  }
  EXPECT_DOUBLE_EQ(pl.total_measured_us(), pl.fabric_us + pl.host_measured_us());
  const std::string line = pl.line();
  EXPECT_NE(line.find("host: Mul scale "), std::string::npos) << line;
  EXPECT_NE(line.find(" us), "), std::string::npos) << line;
  EXPECT_NE(line.find("of modeled / measured time"), std::string::npos) << line;

  pl.host_modeled = false;  // a board without host figures
  EXPECT_NE(pl.line().find("of measured time (no host figures for this board)"), std::string::npos) << pl.line();

  const Status refused = measure_host_ops(g, Tensor(Shape{}), pl);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument) << refused.to_string();
}

TEST(PartitionSegments, OptionsNamingNoNodeAreRefused) {
  const Graph g = se_net();
  auto shapes = infer_shapes(g, 1);
  ASSERT_TRUE(shapes.is_ok());
  plan::PartitionOptions options;
  options.split_before = {"no_such_node"};
  auto p = plan::partition_graph(g, *shapes, options);
  ASSERT_FALSE(p.is_ok());
  EXPECT_NE(p.status().message().find("no_such_node"), std::string::npos) << p.status().message();
}

}  // namespace
}  // namespace tessera
