// Whole-program plans (accel/plan/model_plan.h) and the plan cache (plan_cache.h): the kernel
// search space, streamed pool/add costs, the burst/volume comparison, the modeled program the
// emulator reports, and caching per (model, board) in memory and on disk.
#include <gtest/gtest.h>

#include <algorithm>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "accel/plan/board_profile.h"
#include "accel/plan/model_plan.h"
#include "accel/plan/plan_cache.h"
#include "kernels/kernel_abi.h"
#include "tests/unit/accel/plan/board_profiles.h"

namespace tessera::plan {
namespace {

using testing::board;

abi::LayerDesc pool_desc(uint32_t c, uint32_t h, uint32_t w) {
  abi::LayerDesc d{};
  d.op = abi::kOpPool;
  d.in_c = d.out_c = d.in_channels_total = d.out_channels_total = c;
  d.in_h = h;
  d.in_w = w;
  d.pool_kind = abi::kPoolMax;
  d.pool_h = d.pool_w = 3;
  d.pool_stride_h = d.pool_stride_w = 2;
  d.out_h = (h - 3) / 2 + 1;
  d.out_w = (w - 3) / 2 + 1;
  d.act_lo = -128;
  d.act_hi = 127;
  return d;
}

// A ResNet-style stem and block: 7x7/2 conv, 3x3/2 max-pool, 1x1 / 3x3 / 1x1 bottleneck.
struct Program {
  std::vector<abi::LayerDesc> layers = {make_conv_desc(3, 224, 224, 64, 7, 2), pool_desc(64, 112, 112),
                                        make_conv_desc(64, 55, 55, 64, 1, 1), make_conv_desc(64, 55, 55, 64, 3, 1),
                                        make_conv_desc(64, 55, 55, 256, 1, 1)};
  std::vector<std::string> names = {"conv1", "pool1", "conv2a", "conv2b", "conv2c"};
};

TEST(ModelPlan, KernelSpaceRunsTheKernelsLoopOrdersOnOneComputeUnitWithinTheKernelLimits) {
  const Program p;
  for (const std::string& name : board_names()) {
    const BoardProfile b = board(name.c_str());
    auto plan = plan_layers(p.layers, p.names, b);
    ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
    EXPECT_EQ(plan->compute_units(), 1u) << name;
    ASSERT_EQ(plan->layers.size(), p.layers.size());
    for (const LayerPlan& l : plan->layers) {
      EXPECT_TRUE(abi::layer_fits(l.desc)) << name << " " << l.name;
      EXPECT_LE(l.cost.footprint_bytes, b.tile_budget_bytes()) << name << " " << l.name;
      EXPECT_LE(l.ocm_use(), 1.0);
      EXPECT_EQ(l.searched, l.desc.op == abi::kOpConv);
      if (!l.searched) continue;
      // Output stationary, or input stationary with every input channel in the tile; the
      // descriptor carries the order the kernel runs.
      const bool stationary_input = l.candidate.schedule == Schedule::kInputStationary;
      EXPECT_TRUE(l.candidate.schedule == Schedule::kOutputStationary || stationary_input) << name << " " << l.name;
      if (stationary_input) {
        EXPECT_EQ(l.candidate.tile.n, l.desc.in_c) << name << " " << l.name;
      }
      EXPECT_EQ(l.desc.loop_order, stationary_input ? abi::kLoopInputStationary : abi::kLoopOutputStationary);
      EXPECT_EQ(l.candidate.partition, PartitionKind::kKs);
      EXPECT_EQ(l.desc.tile_m, l.candidate.tile.m);
      EXPECT_EQ(l.desc.tile_n, l.candidate.tile.n);
      EXPECT_EQ(l.desc.tile_r, l.candidate.tile.r);
      EXPECT_EQ(l.desc.tile_c, l.candidate.tile.c);
    }
  }
}

// Kernel instances run batches side by side: throughput and peak scale with them, one image's
// time and DDR traffic do not, and the board's static power is shared between them.
TEST(ModelPlan, KernelInstancesScaleThroughputNotOneImagesTime) {
  const Program p;
  const BoardProfile three = board("aws-f1");
  ASSERT_EQ(three.kernel_instances, 3u);
  BoardProfile one = three;
  one.kernel_instances = 1;
  auto a = plan_layers(p.layers, p.names, three);
  auto b = plan_layers(p.layers, p.names, one);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_EQ(a->instances(), 3u);
  EXPECT_DOUBLE_EQ(a->seconds_per_image(), b->seconds_per_image());
  EXPECT_EQ(a->ddr_bytes(), b->ddr_bytes());
  EXPECT_NEAR(a->images_per_second(), 3 * b->images_per_second(), 1e-9 * b->images_per_second());
  EXPECT_NEAR(a->peak_gops(), 3 * b->peak_gops(), 1e-9);
  const double static_uj = three.static_watts * a->seconds_per_image() * 1e6;
  EXPECT_NEAR(a->energy_uj(), b->energy_uj() - static_uj * 2 / 3, 1e-6 * b->energy_uj());
  // One instance reaches its own DDR channel, not the card's four.
  EXPECT_DOUBLE_EQ(effective_board(three, SearchSpace::kKernel).ddr_gbps, three.instance_ddr_gbps);
  PlanOptions explore;
  explore.space = SearchSpace::kExplore;
  auto e = plan_layers(p.layers, p.names, three, explore);
  ASSERT_TRUE(e.is_ok());
  EXPECT_EQ(e->instances(), 1u);
}

TEST(ModelPlan, ExploreSpaceUsesTheProfilesComputeUnitsAndLeavesDescriptorsAlone) {
  const Program p;
  const BoardProfile f1 = board("aws-f1");
  PlanOptions explore;
  explore.space = SearchSpace::kExplore;
  auto plan = plan_layers(p.layers, p.names, f1, explore);
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  EXPECT_EQ(plan->compute_units(), f1.compute_units);
  EXPECT_GT(f1.compute_units, 1u);
  for (size_t i = 0; i < p.layers.size(); ++i) {
    if (!plan->layers[i].searched) continue;
    EXPECT_EQ(plan->layers[i].desc.tile_m, p.layers[i].tile_m) << "explore choices are studied, not applied";
  }
  // On a one-CU board the explore space contains the kernel's: it never does worse on the
  // objective (energy).
  const BoardProfile zcu102 = board("zcu102");
  plan = plan_layers(p.layers, p.names, zcu102, explore);
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  auto kernel = plan_layers(p.layers, p.names, zcu102);
  ASSERT_TRUE(kernel.is_ok());
  for (size_t i = 0; i < p.layers.size(); ++i) {
    if (!plan->layers[i].searched) continue;
    EXPECT_LE(plan->layers[i].cost.energy_uj, kernel->layers[i].cost.energy_uj * (1 + 1e-12)) << p.names[i];
  }
}

TEST(ModelPlan, TotalsAreTheSumOfTheLayers) {
  const Program p;
  const BoardProfile b = board("zcu102");
  auto plan = plan_layers(p.layers, p.names, b);
  ASSERT_TRUE(plan.is_ok());
  double cycles = 0, energy = 0;
  uint64_t bytes = 0, macs = 0;
  for (const LayerPlan& l : plan->layers) {
    cycles += l.cost.total_cycles;
    energy += l.cost.energy_uj;
    bytes += l.cost.ddr_bytes;
    if (l.searched) macs += l.cost.macs;
  }
  EXPECT_DOUBLE_EQ(plan->cycles(), cycles);
  EXPECT_DOUBLE_EQ(plan->energy_uj(), energy);
  EXPECT_EQ(plan->ddr_bytes(), bytes);
  EXPECT_EQ(plan->macs(), macs);
  EXPECT_EQ(macs, uint64_t{64} * 3 * 49 * 112 * 112 + uint64_t{64} * 64 * 55 * 55 + uint64_t{64} * 64 * 9 * 55 * 55 +
                      uint64_t{256} * 64 * 55 * 55);
  EXPECT_NEAR(plan->images_per_second(), b.fabric_clock_mhz * 1e6 / cycles, 1e-6);
  EXPECT_NEAR(plan->watts(), energy * 1e-6 * plan->images_per_second(), 1e-9);
  // Watts include the static power and stay below what the MAC array plus DDR could burn.
  EXPECT_GT(plan->watts(), b.static_watts);
  EXPECT_LE(plan->gops(), plan->peak_gops());
  EXPECT_DOUBLE_EQ(plan->peak_gops(), 2.0 * 64 * 32 * 300e6 / 1e9);

  const ProgramModel model = program_model(*plan);
  EXPECT_EQ(model.board, "zcu102");
  EXPECT_EQ(model.clock_mhz, 300);
  ASSERT_EQ(model.layers.size(), p.layers.size());
  EXPECT_NEAR(static_cast<double>(model.cycles(1)), cycles, static_cast<double>(p.layers.size()));
  EXPECT_EQ(model.cycles(8), 8 * model.cycles(1));
  EXPECT_NEAR(model.energy_uj(3), 3 * energy, 1e-6 * energy);
}

// A standalone max-pool as kernels/accel_pool.h runs it, on the conv engine's tiles: 64 channels x
// 4 output rows x the whole 55-wide row (9 input rows x 112 bytes per channel fill the 64 KiB
// input tile). Per tile, each channel's 9 (last tile: 7) valid input rows are one run, each lane's
// 4 output rows one run; one load and one write per tile.
TEST(ModelPlan, StreamedPoolRunsOnTheConvEnginesTiles) {
  const abi::LayerDesc d = pool_desc(64, 112, 112);
  auto plan = plan_layers(std::vector<abi::LayerDesc>{d}, std::vector<std::string>{"pool"}, board("zcu102"));
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  const abi::LayerDesc& t = plan->layers[0].desc;
  EXPECT_EQ(t.tile_m, 64u);
  EXPECT_EQ(t.tile_r, 4u);
  EXPECT_EQ(t.tile_c, 55u);
  const CostBreakdown& c = plan->layers[0].cost;
  EXPECT_EQ(c.input_bytes, uint64_t{64} * (13 * 9 + 7) * 112);
  EXPECT_EQ(c.output_bytes, uint64_t{64} * 55 * 55);
  EXPECT_EQ(c.dma_calls, 2u * 14);
  EXPECT_EQ(c.dma_runs, 2u * 64 * 14);
  EXPECT_EQ(c.input_tile_bytes, 64u * 16 * 64);
  EXPECT_EQ(c.footprint_bytes, 64u * 16 * 64 + 64u * 4 * 55);
  EXPECT_EQ(c.ddr_bytes, c.input_bytes + c.output_bytes);
  // The pool loop: one (output pixel, window position) per cycle for 64 channels at once.
  EXPECT_EQ(c.mac_cycles, 13.0 * (4 * 55 * 9 + abi::schedule::kPoolDepth) + (3 * 55 * 9 + abi::schedule::kPoolDepth));
  const CostBreakdown volume = evaluate_stream(plan->layers[0].desc, board("zcu102"), DramModel::kVolume);
  EXPECT_EQ(volume.ddr_bytes, c.ddr_bytes);
  EXPECT_LT(volume.dram_cycles, c.dram_cycles) << "bursts, CAS and DMA starts only add time";
}

// A column tile narrower than the output row reads each valid input row of its window as its own
// run over the tile's clipped input columns (padding rows and columns read nothing), and writes
// each lane's output rows one run each.
TEST(ModelPlan, NarrowPoolTilesReadOneRunPerValidRow) {
  abi::LayerDesc d = pool_desc(2, 9, 9);  // 3x3/2: 4x4 outputs
  d.pool_pad_top = d.pool_pad_left = 1;
  d.out_h = d.out_w = 5;
  d.tile_m = 2, d.tile_n = 1, d.tile_r = 5, d.tile_c = 2;  // column tiles of 2, 2, 1
  ASSERT_TRUE(abi::layer_fits(d));
  const CostBreakdown c = evaluate_stream(d, board("zcu102"), DramModel::kBurst);
  // The row tile's window: input rows [-1, 10) clipped to 9. Column tiles' windows [-1, 4),
  // [3, 8), [7, 10) clipped: 4, 5, 2 columns.
  EXPECT_EQ(c.input_bytes, 2u * 9 * (4 + 5 + 2));
  EXPECT_EQ(c.output_bytes, 2u * 25);
  EXPECT_EQ(c.dma_runs, 2u * 9 * 3 + 2u * 5 * 3);
}

// A global average pool (2048 x 7x7 -> 2048 x 1x1, ResNet-50's last fabric layer) in tiles of 64
// channels: a tile's 64 planes follow each other in CHW, one run in and one run out per tile.
TEST(ModelPlan, GlobalAveragePoolReadsATilesPlanesAsOneRun) {
  abi::LayerDesc d = pool_desc(2048, 7, 7);
  d.pool_kind = abi::kPoolAverage;
  d.pool_h = d.pool_w = 7;
  d.pool_stride_h = d.pool_stride_w = 1;
  d.out_h = d.out_w = 1;
  auto plan = plan_layers(std::vector<abi::LayerDesc>{d}, std::vector<std::string>{"gap"}, board("zcu102"));
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  const CostBreakdown& c = plan->layers[0].cost;
  EXPECT_EQ(c.input_bytes, uint64_t{2048} * 49);
  EXPECT_EQ(c.output_bytes, 2048u);
  EXPECT_EQ(c.dma_runs, 2u * 32 + 1);  // + the {M, S} read
  EXPECT_EQ(c.dma_calls, 2u * 32 + 1);
  const BoardProfile b = board("zcu102");
  EXPECT_EQ(c.bursts, 32 * ((64 * 49 + b.burst_bytes - 1) / b.burst_bytes) + 32 + 1);
}

abi::LayerDesc add_desc(uint32_t c, uint32_t h, uint32_t w) {
  abi::LayerDesc d{};
  d.op = abi::kOpAdd;
  d.in_c = d.out_c = c;
  d.in_h = d.out_h = h;
  d.in_w = d.out_w = w;
  d.in_channels_total = d.in2_channels_total = d.out_channels_total = c;
  d.in2_offset = c * h * w;
  d.out_offset = 2 * c * h * w;
  d.act_lo = -128;
  d.act_hi = 127;
  return d;
}

// kernels/accel_add.h streams each tensor's channel slice flat: a 2048x7x7 add costs as many
// DMA calls as any other add of the same 100352 bytes, 3 per chunk (+1: the {M_a, M_b, S} read),
// not 3 (or more) per 49-byte channel plane. Chunks: an eighth of the block in multiples of 256
// bytes, between 4 KiB and abi::kAddChunkBytes (the compiler's rule, so the ping-pong overlaps).
TEST(ModelPlan, StreamedAddCostsCallsPerChunkNotPerChannel) {
  const BoardProfile b = board("zcu102");
  const std::vector<abi::LayerDesc> layers = {add_desc(2048, 7, 7), add_desc(128, 28, 28), add_desc(2048, 14, 14)};
  auto plan = plan_layers(layers, std::vector<std::string>{"add7", "add28", "add14"}, b);
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  for (const LayerPlan& l : plan->layers) {
    const uint64_t bytes = uint64_t{l.desc.out_c} * l.desc.out_h * l.desc.out_w;
    const uint64_t chunk = std::clamp<uint64_t>((bytes / 8 + 255) / 256 * 256, 4096, abi::kAddChunkBytes);
    EXPECT_EQ(uint64_t{l.desc.tile_r} * l.desc.tile_c, chunk) << l.name;
    EXPECT_TRUE(abi::layer_fits(l.desc)) << l.name;
    const uint64_t chunks = (bytes + chunk - 1) / chunk;
    EXPECT_EQ(l.cost.dma_calls, 3 * chunks + 1) << l.name;
    EXPECT_EQ(l.cost.dma_runs, 3 * chunks + 1) << l.name;
    EXPECT_EQ(l.cost.input_bytes, 2 * bytes) << l.name;
    EXPECT_EQ(l.cost.output_bytes, bytes) << l.name;
    EXPECT_EQ(l.cost.bursts, 3 * ((chunks - 1) * (chunk / b.burst_bytes) +
                                  (bytes - (chunks - 1) * chunk + b.burst_bytes - 1) / b.burst_bytes) +
                                 1)
        << l.name;
  }
  EXPECT_EQ(plan->layers[0].cost.dma_calls, 3u * 8 + 1);  // 100352 bytes / 12544
  EXPECT_EQ(plan->layers[0].cost.dma_calls, plan->layers[1].cost.dma_calls);
  EXPECT_EQ(plan->layers[2].cost.dma_calls, 3u * 13 + 1);  // 401408 bytes / 32768: bytes, not channels, count
}

// TSO's comparison: tiles the volume-only model picks, timed by the burst model, are never
// better than the burst model's own pick (same space, the pick minimises the objective).
TEST(ModelPlan, BurstAwarePlanBeatsTheVolumePlanRescoredWithBursts) {
  const Program p;
  for (const std::string& name : board_names()) {
    const BoardProfile b = board(name.c_str());
    PlanOptions burst, volume;
    burst.objective = volume.objective = Objective::kTime;
    volume.dram = DramModel::kVolume;
    auto a = plan_layers(p.layers, p.names, b, burst);
    auto v = plan_layers(p.layers, p.names, b, volume);
    ASSERT_TRUE(a.is_ok() && v.is_ok());
    const ModelPlan rescored = rescore(*v, DramModel::kBurst);
    EXPECT_EQ(rescored.options.dram, DramModel::kBurst);
    for (size_t i = 0; i < p.layers.size(); ++i) {
      EXPECT_EQ(rescored.layers[i].candidate.tile.m, v->layers[i].candidate.tile.m);
      EXPECT_LE(a->layers[i].cost.total_cycles, rescored.layers[i].cost.total_cycles * (1 + 1e-12))
          << name << " " << p.names[i];
    }
  }
}

TEST(ModelPlan, NaiveTilesNeverMoveLessThanTheBytesOptimum) {
  const Program p;
  for (const std::string& name : board_names()) {
    PlanOptions optimal, naive;
    optimal.objective = naive.objective = Objective::kDdrBytes;
    naive.naive = true;
    auto o = plan_layers(p.layers, p.names, board(name.c_str()), optimal);
    auto n = plan_layers(p.layers, p.names, board(name.c_str()), naive);
    ASSERT_TRUE(o.is_ok() && n.is_ok());
    for (size_t i = 0; i < p.layers.size(); ++i) {
      EXPECT_LE(o->layers[i].cost.ddr_bytes, n->layers[i].cost.ddr_bytes) << name << " " << p.names[i];
    }
  }
}

TEST(ModelPlan, ALayerNoTileFitsIsAnErrorNamingIt) {
  Program p;
  BoardProfile tiny = board("zcu102");
  tiny.input_buffer_bytes = tiny.weight_buffer_bytes = tiny.output_buffer_bytes = 64;
  auto plan = plan_layers(p.layers, p.names, tiny);
  ASSERT_FALSE(plan.is_ok());
  EXPECT_NE(plan.status().message().find("conv1"), std::string::npos) << plan.status().to_string();
  EXPECT_FALSE(plan_layers(p.layers, std::vector<std::string>{"one"}, tiny).is_ok());
}

class PlanCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("tessera_plan_cache_" + std::to_string(::getpid()) + "_" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
  Program p_;
  BoardProfile b_ = board("zcu102");
};

TEST_F(PlanCacheTest, SecondPlanComesFromTheCacheWithTheSameChoices) {
  PlanCache cache(dir_);
  bool from_cache = true;
  auto first = plan_layers_cached(p_.layers, p_.names, b_, {}, "resnet-stem", &cache, &from_cache);
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  EXPECT_FALSE(from_cache);
  EXPECT_TRUE(std::filesystem::exists(cache.file_for("resnet-stem", "zcu102")));
  // A new cache on the same directory (a restarted daemon) finds the file.
  PlanCache restarted(dir_);
  auto second = plan_layers_cached(p_.layers, p_.names, b_, {}, "resnet-stem", &restarted, &from_cache);
  ASSERT_TRUE(second.is_ok()) << second.status().to_string();
  EXPECT_TRUE(from_cache);
  EXPECT_EQ(restarted.hits(), 1u);
  for (size_t i = 0; i < p_.layers.size(); ++i) {
    const LayerPlan &a = first->layers[i], &b = second->layers[i];
    EXPECT_EQ(a.candidate.tile.m, b.candidate.tile.m);
    EXPECT_EQ(a.candidate.tile.n, b.candidate.tile.n);
    EXPECT_EQ(a.candidate.tile.r, b.candidate.tile.r);
    EXPECT_EQ(a.candidate.tile.c, b.candidate.tile.c);
    EXPECT_EQ(0, std::memcmp(&a.desc, &b.desc, sizeof(a.desc)));
    EXPECT_DOUBLE_EQ(a.cost.total_cycles, b.cost.total_cycles);
    EXPECT_EQ(b.evaluated, 0u) << "a cache hit does not search";
  }
}

TEST_F(PlanCacheTest, AnotherBoardOrOptionOrLayerIsAMiss) {
  PlanCache cache(dir_);
  bool from_cache = false;
  ASSERT_TRUE(plan_layers_cached(p_.layers, p_.names, b_, {}, "m", &cache, &from_cache).is_ok());
  BoardProfile faster = b_;
  faster.ddr_gbps *= 2;  // same name, other numbers: the profile was edited
  ASSERT_TRUE(plan_layers_cached(p_.layers, p_.names, faster, {}, "m", &cache, &from_cache).is_ok());
  EXPECT_FALSE(from_cache);
  PlanOptions bytes;
  bytes.objective = Objective::kDdrBytes;
  ASSERT_TRUE(plan_layers_cached(p_.layers, p_.names, b_, bytes, "m", &cache, &from_cache).is_ok());
  EXPECT_FALSE(from_cache);
  Program wider;
  wider.layers[3] = make_conv_desc(64, 55, 55, 128, 3, 1);
  EXPECT_NE(plan_key(wider.layers, b_, {}), plan_key(p_.layers, b_, {}));
  EXPECT_EQ(plan_key(p_.layers, b_, {}), plan_key(p_.layers, b_, {}));
}

TEST_F(PlanCacheTest, ACorruptFileIsAMissAndIsRewritten) {
  PlanCache cache(dir_);
  ASSERT_TRUE(plan_layers_cached(p_.layers, p_.names, b_, {}, "m", &cache).is_ok());
  const auto file = cache.file_for("m", "zcu102");
  std::ofstream(file, std::ios::trunc) << "{ not json";
  PlanCache fresh(dir_);
  bool from_cache = true;
  ASSERT_TRUE(plan_layers_cached(p_.layers, p_.names, b_, {}, "m", &fresh, &from_cache).is_ok());
  EXPECT_FALSE(from_cache);
  PlanCache again(dir_);
  ASSERT_TRUE(plan_layers_cached(p_.layers, p_.names, b_, {}, "m", &again, &from_cache).is_ok());
  EXPECT_TRUE(from_cache) << "the corrupt file was replaced";
}

TEST_F(PlanCacheTest, MemoryOnlyCacheWorksWithoutADirectory) {
  PlanCache cache;
  bool from_cache = true;
  ASSERT_TRUE(plan_layers_cached(p_.layers, p_.names, b_, {}, "m", &cache, &from_cache).is_ok());
  EXPECT_FALSE(from_cache);
  ASSERT_TRUE(plan_layers_cached(p_.layers, p_.names, b_, {}, "m", &cache, &from_cache).is_ok());
  EXPECT_TRUE(from_cache);
  EXPECT_FALSE(std::filesystem::exists(dir_));
}

}  // namespace
}  // namespace tessera::plan
