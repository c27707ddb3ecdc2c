// The planner's cost model (accel/plan/cost_model.cc) held against the cycle-accounting C
// simulation of the HLS kernel (kernels/accel_count.h, target tessera_kernel_csim_count, built
// with the zcu102 profile's MAC array). Per conv layer: the compute, load and store halves' cycles
// (pipelined loops: iterations x declared II + assumed depth) and the DDR bytes within 10% of the model;
// bursts within 10% in total. One image per layer; the zoo networks run every distinct layer once.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "accel/plan/board_profile.h"
#include "accel/plan/cost_model.h"
#include "accel/plan/model_plan.h"
#include "accel/program/program.h"
#include "accel/runtime/plan_model.h"
#include "kernels/accel_count.h"
#include "kernels/kernel_abi.h"
#include "kernels/tessera_accel.h"

namespace tessera {
namespace {

using kernel::LayerCounter;

constexpr double kTolerance = 0.10;

plan::BoardProfile zcu102() {
  Result<plan::BoardProfile> b = plan::load_board_profile("zcu102");
  EXPECT_TRUE(b.is_ok()) << b.status().message();
  return plan::effective_board(b.value(), plan::SearchSpace::kKernel);
}

// Runs the program once (batch 1) through the counting C-sim; one counter per layer.
std::vector<LayerCounter> run_counted(const CompiledProgram& prog, uint32_t burst_bytes) {
  std::vector<LayerCounter> counters(prog.layers.size());
  kernel::KernelCounters& k = kernel::kernel_counters();
  k = kernel::KernelCounters{};
  k.burst_bytes = burst_bytes;
  k.layer_capacity = static_cast<uint32_t>(counters.size());
  k.layers = counters.data();
  const std::vector<uint32_t> words = prog.program_words(1);
  std::vector<int8_t> arena(prog.header.arena_image_bytes + 64);
  std::mt19937 rng(7);
  for (int8_t& v : arena) v = static_cast<int8_t>(rng());
  uint32_t status[abi::kStatusWords] = {0, 0};
  tessera_accel(words.data(), prog.weights.data(), prog.quant.data(), arena.data(), status);
  k = kernel::KernelCounters{};
  EXPECT_EQ(status[0], abi::kRunOk) << "layer " << status[1];
  return counters;
}

struct Counted {
  double compute_cycles = 0, load_cycles = 0, store_cycles = 0, write_cycles = 0;
  uint64_t ddr_bytes = 0, bursts = 0;
};

Counted totals(const LayerCounter& c) {
  Counted t;
  t.compute_cycles = static_cast<double>(c.loop_cycles[kernel::kHalfCompute]);
  t.load_cycles = static_cast<double>(c.loop_cycles[kernel::kHalfLoad]);
  t.store_cycles = static_cast<double>(c.loop_cycles[kernel::kHalfStore]);
  t.write_cycles = static_cast<double>(c.loop_cycles[kernel::kHalfWrite]);
  for (uint32_t p : {kernel::kPortWeights, kernel::kPortQuant, kernel::kPortArena}) {
    t.ddr_bytes += c.ports[p].bytes_read + c.ports[p].bytes_written;
    t.bursts += c.ports[p].bursts_read + c.ports[p].bursts_written;
  }
  return t;
}

double rel_error(double model, double counted) { return counted > 0 ? (model - counted) / counted : 0; }

// Error distribution over checked layers, for the report.
struct Errors {
  std::vector<double> cycles, bytes, load, store, write;
  double model_bursts = 0, counted_bursts = 0;
  void print(const std::string& what) const {
    for (const auto& [name, v] :
         {std::pair{"compute cycles", cycles}, std::pair{"load cycles", load}, std::pair{"store cycles", store},
          std::pair{"write cycles", write}, std::pair{"DDR bytes", bytes}}) {
      if (v.empty()) continue;
      std::vector<double> s = v;
      std::sort(s.begin(), s.end());
      std::printf("%s: %zu layers, %s error min %+.2f%% median %+.2f%% max %+.2f%%\n", what.c_str(), s.size(), name,
                  100 * s.front(), 100 * s[s.size() / 2], 100 * s.back());
    }
    std::printf("%s: bursts model %.0f counted %.0f (%+.2f%%)\n", what.c_str(), model_bursts, counted_bursts,
                100 * rel_error(model_bursts, counted_bursts));
  }
};

// Checks every conv layer of `prog` (tiles as planned in `plan`) against its counted run.
Errors check_layers(const CompiledProgram& prog, const plan::ModelPlan& plan, const std::vector<std::string>& names) {
  const std::vector<LayerCounter> counted = run_counted(prog, plan.board.burst_bytes);
  Errors e;
  for (size_t i = 0; i < prog.layers.size(); ++i) {
    // Every fabric layer: conv, pool and add.
    const plan::CostBreakdown& m = plan.layers[i].cost;
    const Counted c = totals(counted[i]);
    const double ec = rel_error(m.mac_cycles, c.compute_cycles);
    const double eb = rel_error(static_cast<double>(m.ddr_bytes), static_cast<double>(c.ddr_bytes));
    const double el = rel_error(m.load_cycles, c.load_cycles);
    const double es = rel_error(m.store_cycles, c.store_cycles);
    const double ew = rel_error(m.write_cycles, c.write_cycles);
    e.write.push_back(ew);
    e.load.push_back(el);
    e.store.push_back(es);
    e.cycles.push_back(ec);
    e.bytes.push_back(eb);
    e.model_bursts += static_cast<double>(m.bursts);
    e.counted_bursts += static_cast<double>(c.bursts);
    const abi::LayerDesc& d = prog.layers[i];
    if (std::getenv("TESSERA_CYCLES_VERBOSE") != nullptr) {
      const kernel::PortCounter* p = counted[i].ports;
      std::printf(
          "%-28s tile %ux%ux%ux%u in %ux%ux%u out %u: cycles %.0f/%.0f load %.0f/%.0f store %.0f/%.0f bytes %llu/%llu "
          "bursts "
          "%llu/%llu (w %llu q %llu in %llu out %llu)\n",
          names[i].c_str(), d.tile_m, d.tile_n, d.tile_r, d.tile_c, d.in_c, d.in_h, d.in_w, d.out_c, m.mac_cycles,
          c.compute_cycles, m.load_cycles, c.load_cycles, m.store_cycles, c.store_cycles,
          static_cast<unsigned long long>(m.ddr_bytes), static_cast<unsigned long long>(c.ddr_bytes),
          static_cast<unsigned long long>(m.bursts), static_cast<unsigned long long>(c.bursts),
          static_cast<unsigned long long>(p[kernel::kPortWeights].bursts_read),
          static_cast<unsigned long long>(p[kernel::kPortQuant].bursts_read),
          static_cast<unsigned long long>(p[kernel::kPortArena].bursts_read),
          static_cast<unsigned long long>(p[kernel::kPortArena].bursts_written));
    }
    EXPECT_LE(std::abs(ec), kTolerance) << names[i] << " compute cycles: model " << m.mac_cycles << " counted "
                                        << c.compute_cycles << " (tile " << d.tile_m << "x" << d.tile_n << "x"
                                        << d.tile_r << "x" << d.tile_c << ")";
    EXPECT_LE(std::abs(el), kTolerance) << names[i] << " load cycles: model " << m.load_cycles << " counted "
                                        << c.load_cycles;
    EXPECT_LE(std::abs(es), kTolerance) << names[i] << " store cycles: model " << m.store_cycles << " counted "
                                        << c.store_cycles;
    EXPECT_LE(std::abs(ew), kTolerance) << names[i] << " write cycles: model " << m.write_cycles << " counted "
                                        << c.write_cycles;
    EXPECT_LE(std::abs(eb), kTolerance) << names[i] << " DDR bytes: model " << m.ddr_bytes << " counted "
                                        << c.ddr_bytes;
  }
  EXPECT_LE(std::abs(rel_error(e.model_bursts, e.counted_bursts)), kTolerance) << "bursts in total";
  return e;
}

// The program with only the first layer of each distinct (descriptor shape, tiles): the arena
// layout is unchanged, so every kept layer reads and writes where it did.
void keep_distinct(CompiledProgram& prog, plan::ModelPlan& plan, std::vector<std::string>& names) {
  std::map<std::vector<uint32_t>, bool> seen;
  CompiledProgram out = prog;
  out.layers.clear();
  plan::ModelPlan kept = plan;
  kept.layers.clear();
  std::vector<std::string> kept_names;
  for (size_t i = 0; i < prog.layers.size(); ++i) {
    abi::LayerDesc key = prog.layers[i];
    key.in_offset = key.out_offset = key.in2_offset = key.weight_offset = key.quant_offset = 0;
    key.in_channel_base = key.out_channel_base = key.in2_channel_base = 0;
    std::vector<uint32_t> words(abi::kLayerWords);
    std::memcpy(words.data(), &key, sizeof(key));
    if (!seen.emplace(words, true).second) continue;
    out.layers.push_back(prog.layers[i]);
    kept.layers.push_back(plan.layers[i]);
    kept_names.push_back(names[i]);
  }
  prog = std::move(out);
  plan = std::move(kept);
  names = std::move(kept_names);
}

// Plans a model file (kernel space, zcu102) and checks its distinct fabric layers.
void check_model(const std::filesystem::path& model) {
  plan::PlanOptions options;
  options.threads = 1;
  Result<ModelPlanning> planned = plan_model(model, zcu102(), options);
  ASSERT_TRUE(planned.is_ok()) << planned.status().message();
  plan::CompiledModel& c = planned.value().compiled;
  ASSERT_TRUE(c.has_fabric);
  for (plan::CompiledSegment& segment : c.segments) {
    if (!segment.fabric) continue;
    // Each fabric segment is a program of its own; its plan is the plan's slice of its layers.
    plan::ModelPlan part = c.plan;
    part.handovers.clear();
    part.layers.assign(
        c.plan.layers.begin() + static_cast<std::ptrdiff_t>(segment.first_layer),
        c.plan.layers.begin() + static_cast<std::ptrdiff_t>(segment.first_layer + segment.program.layers.size()));
    std::vector<std::string> names = segment.layer_names;
    keep_distinct(segment.program, part, names);
    check_layers(segment.program, part, names)
        .print(model.parent_path().filename().string() + "/" + model.filename().string());
  }
}

// The counted C simulation is the kernel the zcu102 profile specifies (kernels/CMakeLists.txt reads
// the macros from zcu102.toml, as kernels/Makefile does for the Vitis build): one hardware spec.
TEST(KernelCycles, CountedKernelIsTheZcu102ProfilesKernel) {
  const plan::BoardProfile b = zcu102();
  EXPECT_EQ(TESSERA_MAC_LANES, b.mac_lanes);
  EXPECT_EQ(TESSERA_MAC_CHANNELS, b.mac_channels);
  EXPECT_EQ(TESSERA_INT8_PACK, b.int8_macs_per_dsp == 2 ? 1 : 0);
  EXPECT_EQ(TESSERA_ADD_LANES, b.add_lanes);
}

TEST(KernelCycles, BundledModelMatchesCostModel) {
  check_model(std::filesystem::path(TESSERA_SOURCE_DIR) / "models/fashion-mnist");
}

// Random conv layers (plain, strided, grouped, depthwise, pooled), planned by the tile search.
TEST(KernelCycles, RandomConvLayersMatchCostModel) {
  const plan::BoardProfile board = zcu102();
  std::mt19937 rng(14);
  auto pick = [&](std::vector<uint32_t> v) { return v[rng() % v.size()]; };
  std::vector<abi::LayerDesc> descs;
  std::vector<std::string> names;
  for (int i = 0; i < 24; ++i) {
    const uint32_t in_c = pick({3, 8, 16, 32, 64, 96, 128});
    const uint32_t hw = pick({7, 13, 14, 28, 56});
    const uint32_t k = pick({1, 3, 5});
    const uint32_t groups = i % 4 == 3 ? in_c : 1;  // depthwise every fourth
    const uint32_t out_c = groups > 1 ? in_c : pick({16, 32, 64, 128});
    abi::LayerDesc d = plan::make_conv_desc(in_c, hw, hw, out_c, k, pick({1, 2}), groups);
    if (i % 5 == 4 && d.out_h >= 4) {  // fused 2x2 max-pool
      d.pool_kind = abi::kPoolMax;
      d.pool_h = d.pool_w = d.pool_stride_h = d.pool_stride_w = 2;
      d.out_h /= 2;
      d.out_w /= 2;
    }
    descs.push_back(d);
    names.push_back("random" + std::to_string(i));
  }
  plan::PlanOptions options;
  options.threads = 1;
  Result<plan::ModelPlan> planned = plan::plan_layers(descs, names, board, options);
  ASSERT_TRUE(planned.is_ok()) << planned.status().message();
  CompiledProgram prog;
  uint32_t arena = 0;
  for (plan::LayerPlan& lp : planned.value().layers) {
    abi::LayerDesc d = lp.desc;
    d.in_offset = arena;
    arena += (d.in_c * d.in_h * d.in_w + 63) / 64 * 64;
    d.out_offset = arena;
    arena += (d.out_c * d.out_h * d.out_w + 63) / 64 * 64;
    d.weight_offset = static_cast<uint32_t>(prog.weights.size());
    prog.weights.resize(prog.weights.size() + (d.out_c * (d.in_c / d.groups) * d.kernel_h * d.kernel_w + 63) / 64 * 64,
                        1);
    d.quant_offset = static_cast<uint32_t>(prog.quant.size());
    for (uint32_t q : {0u, 1u << 14, 20u}) prog.quant.insert(prog.quant.end(), d.out_c, static_cast<int32_t>(q));
    prog.layers.push_back(d);
  }
  prog.header.arena_image_bytes = arena;
  check_layers(prog, planned.value(), names).print("random conv layers");
}

class ZooCycles : public testing::TestWithParam<const char*> {};

TEST_P(ZooCycles, DistinctLayersMatchCostModel) {
  const std::filesystem::path model = std::filesystem::path(TESSERA_ZOO_DIR) / GetParam() / "model.onnx";
  if (!std::filesystem::exists(model)) GTEST_SKIP() << model << " not made (ctest -L reference makes the zoo)";
  check_model(model);
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooCycles,
                         testing::Values("squeezenet1_1", "resnet18", "googlenet", "mobilenet_v2", "alexnet",
                                         "resnet50"));

}  // namespace
}  // namespace tessera
