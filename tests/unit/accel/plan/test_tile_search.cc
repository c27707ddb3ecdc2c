// Board profiles, the conv cost model and the per-layer tile search (accel/plan/). Layers from
// Cecconi et al. (seeds/000: FlowNetS contractive part) and Sousa et al. (seeds/002: TSO's
// InceptionV3 layer 80x73x73, 192 filters 3x3).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "accel/plan/board_profile.h"
#include "accel/plan/cost_model.h"
#include "accel/plan/tile_search.h"
#include "kernels/kernel_abi.h"
#include "tests/unit/accel/plan/board_profiles.h"

namespace tessera::plan {
namespace {

using testing::board;

TEST(BoardProfile, AllBoardsLoad) {
  const std::vector<std::string> expected = {"aws-f1", "zc702", "zc706", "zcu102", "zcu104"};
  EXPECT_EQ(board_names(), expected) << "boards dir " << boards_dir();
  for (const std::string& name : expected) {
    auto b = load_board_profile(name);
    ASSERT_TRUE(b.is_ok()) << b.status().to_string();
    EXPECT_EQ(b->name, name);
    EXPECT_GT(b->macs_per_cycle(), 0u);
    EXPECT_GE(b->compute_units, 1u);
    EXPECT_GT(b->ddr_bytes_per_cycle(), 0.0);
    EXPECT_EQ(b->tile_budget_bytes(), (b->input_buffer_bytes + b->weight_buffer_bytes + b->output_buffer_bytes) / 2);
  }
  EXPECT_NEAR(board("zcu102").ddr_gbps, 19.2, 1e-9);
  EXPECT_NEAR(board("zc702").ddr_gbps, 4.2, 1e-9);
}

TEST(BoardProfile, MissingBoardNamesTheFile) {
  auto b = load_board_profile("no-such-board");
  ASSERT_FALSE(b.is_ok());
  EXPECT_EQ(b.status().code(), StatusCode::kNotFound);
  EXPECT_NE(b.status().message().find("no-such-board.toml"), std::string::npos) << b.status().message();
}

TEST(BoardProfile, BadKeyNamesTheFileAndTheKey) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "tessera_board_test";
  std::filesystem::create_directories(dir);
  const std::filesystem::path file = dir / "broken.toml";
  std::filesystem::copy_file(std::filesystem::path(boards_dir()) / "zcu102.toml", file,
                             std::filesystem::copy_options::overwrite_existing);
  ASSERT_TRUE(load_board_profile_file(file).is_ok());
  std::string text;
  {
    std::ifstream in(file);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  const auto pos = text.find("\nddr_gbps = 19.2");
  ASSERT_NE(pos, std::string::npos);
  text.replace(pos, 16, "\nddr_gbps = -1.0");
  {
    std::ofstream out(file, std::ios::trunc);
    out << text;
  }
  auto b = load_board_profile_file(file);
  ASSERT_FALSE(b.is_ok());
  EXPECT_NE(b.status().message().find("broken.toml"), std::string::npos) << b.status().message();
  EXPECT_NE(b.status().message().find("'ddr_gbps'"), std::string::npos) << b.status().message();
  std::filesystem::remove_all(dir);
}

// Hand-counted traffic of a 1x1 conv, 4 -> 8 channels on 8x8, tiles m4 n2 r4 c8 (full width),
// one CU: seeds/000 eq. 5-6 call counts and TSO eq. 3-4 reuse.
TEST(CostModel, CountsMatchTheSeedEquations) {
  const abi::LayerDesc d = make_conv_desc(4, 8, 8, 8, 1, 1);
  const ConvGeometry g = conv_geometry(d);
  const BoardProfile b = board("zcu102");
  const TileShape t{4, 2, 4, 8};
  const CostBreakdown os = evaluate(g, b, {t, Schedule::kOutputStationary, PartitionKind::kKs}, DramModel::kBurst);
  EXPECT_EQ(os.input_bytes, 2u * 4 * 8 * 8);  // input read once per m-tile
  EXPECT_EQ(os.weight_bytes, 2u * 8 * 4);     // weights once per spatial tile
  EXPECT_EQ(os.output_bytes, 8u * 8 * 8);     // final int8 outputs once
  EXPECT_EQ(os.dma_calls, 8u + 8u + 4u);
  EXPECT_EQ(os.steps, 2u * 2 * 1 * 2);
  const CostBreakdown is = evaluate(g, b, {t, Schedule::kInputStationary, PartitionKind::kKs}, DramModel::kBurst);
  EXPECT_EQ(is.input_bytes, 4u * 8 * 8);                        // input read once
  EXPECT_EQ(is.output_bytes, 8u * 8 * 8 + 2u * 8 * 8 * 8 * 4);  // + one int32 spill out and back
  const CostBreakdown ws = evaluate(g, b, {t, Schedule::kWeightStationary, PartitionKind::kKs}, DramModel::kBurst);
  EXPECT_EQ(ws.weight_bytes, 8u * 4);  // every weight once
  const CostBreakdown vol = evaluate(g, b, {t, Schedule::kOutputStationary, PartitionKind::kKs}, DramModel::kVolume);
  EXPECT_EQ(vol.ddr_bytes, os.ddr_bytes);
  EXPECT_NEAR(vol.dram_cycles, static_cast<double>(os.ddr_bytes) / b.ddr_bytes_per_cycle(), 1e-9);
  EXPECT_NEAR(os.dram_cycles,
              static_cast<double>(os.bursts) * b.burst_bytes / b.ddr_bytes_per_cycle() +
                  static_cast<double>(os.dma_runs) * b.cas_cycles +
                  static_cast<double>(os.dma_calls) * b.dma_start_cycles,
              1e-6);
  EXPECT_GT(os.dram_cycles, vol.dram_cycles);
  // Runs: input 2 m-tiles x 4 ch x 2 row tiles (full width), weights 8 filters x 2 n-tiles,
  // outputs 8 ch x 2 row tiles, quant 3 per output tile (2 m-tiles x 2 row tiles).
  EXPECT_EQ(os.dma_runs, 2u * 4 * 2 + 2u * 8 * 2 + 8u * 2 + 3u * 4);
  // The kernel's compute half (kernels/accel_conv.h): 8 steps of one tap's weight staging (64
  // lanes, one pass) and pixel loop (32 pixels x one chunk of zcu102's 32 channels at II 1). The
  // store half (accel_conv_store.h), per output tile: three quant runs of one beat, 32 requantised
  // pixels; the write half: 4 lanes' runs of one beat.
  namespace sch = abi::schedule;
  EXPECT_NEAR(os.mac_cycles, 8.0 * (64 + sch::kWeightStageDepth + 32 + sch::kConvPixelDepth), 1e-9);
  EXPECT_NEAR(os.store_cycles, 4.0 * (3 * (1 + sch::kQuantReadDepth) + 32 + sch::kRequantDepth), 1e-9);
  EXPECT_NEAR(os.write_cycles, 4.0 * (4 * 1 + sch::kStoreDepth), 1e-9);
  EXPECT_EQ(os.macs, 8u * 4 * 8 * 8);
  EXPECT_GT(os.energy_uj, 0.0);
}

TEST(CostModel, PartialRowsCostMoreBurstsThanFullRows) {
  const abi::LayerDesc d = make_conv_desc(16, 32, 100, 16, 3, 1);
  const ConvGeometry g = conv_geometry(d);
  const BoardProfile b = board("zcu102");
  const auto full =
      evaluate(g, b, {{16, 16, 4, 100}, Schedule::kOutputStationary, PartitionKind::kKs}, DramModel::kBurst);
  const auto part =
      evaluate(g, b, {{16, 16, 8, 50}, Schedule::kOutputStationary, PartitionKind::kKs}, DramModel::kBurst);
  EXPECT_LT(full.bursts, part.bursts);
}

// ResNet-50's downsample 1x1/2 conv 1024x14x14 -> 2048x7x7: the windows need 13 of each row's
// 14 input columns. A tile covering all 7 output columns reads whole rows (kernels/accel_conv.h
// load_input_tile), contiguous across the row tile: one run per channel per row tile and
// m-tile, bytes = whole rows. A 4-column tile reads every input row of every column tile as
// its own run.
TEST(CostModel, FullWidthStride2ConvReadsOneRunPerChannelPerRowTile) {
  const abi::LayerDesc d = make_conv_desc(1024, 14, 14, 2048, 1, 2);
  ASSERT_EQ(d.out_w, 7u);
  const ConvGeometry g = conv_geometry(d);
  ASSERT_EQ(g.in_cols(7), 13u);
  const BoardProfile b = board("zcu102");
  const Candidate full{{64, 64, 7, 7}, Schedule::kOutputStationary, PartitionKind::kKs};
  const CostBreakdown c = evaluate(g, b, full, DramModel::kBurst);
  const uint64_t m_tiles = 2048 / 64;
  const uint64_t in_runs = m_tiles * 1024 * 1;  // one row tile of 13 input rows
  // Outputs: whole 7x7 planes, one run per m-tile; quant: 3 runs of 64 x 4 bytes per m-tile.
  const uint64_t w_runs = uint64_t{2048} * (1024 / 64), out_runs = m_tiles, q_runs = 3 * m_tiles;
  EXPECT_EQ(c.dma_runs, in_runs + w_runs + out_runs + q_runs);
  EXPECT_EQ(c.input_bytes, m_tiles * 1024 * 13 * 14);  // whole rows 0..12
  EXPECT_EQ(c.bursts, m_tiles * 1024 * ((13 * 14 + b.burst_bytes - 1) / b.burst_bytes) +
                          uint64_t{2048} * (1024 / 64) * 1 + m_tiles * ((64 * 49 + b.burst_bytes - 1) / b.burst_bytes) +
                          q_runs * ((64 * 4 + b.burst_bytes - 1) / b.burst_bytes));
  const Candidate narrow{{64, 64, 7, 4}, Schedule::kOutputStationary, PartitionKind::kKs};
  const CostBreakdown n = evaluate(g, b, narrow, DramModel::kBurst);
  EXPECT_EQ(n.input_bytes, m_tiles * 1024 * 13 * (7 + 5));  // columns 0..6 and 8..12
  // Input: 13 rows x 2 column tiles per channel; weights re-read per column tile; outputs per row.
  EXPECT_EQ(n.dma_runs, m_tiles * 1024 * 13 * 2 + 2 * w_runs + uint64_t{2048} * 7 * 2 + 2 * q_runs);
  EXPECT_LT(c.dram_cycles, n.dram_cycles);
}

std::vector<abi::LayerDesc> small_layers() {
  return {make_conv_desc(8, 16, 16, 16, 3, 1),  make_conv_desc(3, 32, 32, 24, 5, 2),
          make_conv_desc(32, 14, 14, 48, 1, 1), make_conv_desc(16, 20, 20, 16, 3, 1, 16),
          make_conv_desc(20, 9, 11, 70, 3, 1),  make_conv_desc(96, 13, 13, 128, 3, 1)};
}

TEST(TileSearch, MatchesBruteForce) {
  for (const char* name : {"zc702", "aws-f1"}) {
    const BoardProfile b = board(name);
    for (const abi::LayerDesc& d : small_layers()) {
      for (DramModel model : {DramModel::kBurst, DramModel::kVolume}) {
        for (Objective obj : {Objective::kTime, Objective::kDdrBytes, Objective::kEnergy}) {
          SearchOptions o;
          o.model = model;
          o.objective = obj;
          auto fast = search_tiles(d, b, o);
          auto slow = search_tiles_brute_force(d, b, o);
          ASSERT_TRUE(fast.is_ok()) << fast.status().to_string();
          ASSERT_TRUE(slow.is_ok()) << slow.status().to_string();
          const Candidate &x = fast->candidate, &y = slow->candidate;
          SCOPED_TRACE(std::string(name) + " layer " + std::to_string(d.in_c) + "x" + std::to_string(d.in_h) + " -> " +
                       std::to_string(d.out_c));
          EXPECT_EQ(x.tile.m, y.tile.m);
          EXPECT_EQ(x.tile.n, y.tile.n);
          EXPECT_EQ(x.tile.r, y.tile.r);
          EXPECT_EQ(x.tile.c, y.tile.c);
          EXPECT_EQ(x.schedule, y.schedule);
          EXPECT_EQ(x.partition, y.partition);
          EXPECT_EQ(fast->cost.total_cycles, slow->cost.total_cycles);
          EXPECT_EQ(fast->cost.ddr_bytes, slow->cost.ddr_bytes);
        }
      }
    }
  }
}

// FlowNetS contractive layers (seeds/000 sec. 2): input 6x384x512, 'same' padding.
std::vector<std::pair<const char*, abi::LayerDesc>> flownet_s() {
  return {{"conv1", make_conv_desc(6, 384, 512, 64, 7, 2)},   {"conv2", make_conv_desc(64, 192, 256, 128, 5, 2)},
          {"conv3", make_conv_desc(128, 96, 128, 256, 5, 2)}, {"conv3_1", make_conv_desc(256, 48, 64, 256, 3, 1)},
          {"conv4", make_conv_desc(256, 48, 64, 512, 3, 2)},  {"conv4_1", make_conv_desc(512, 24, 32, 512, 3, 1)},
          {"conv5", make_conv_desc(512, 24, 32, 512, 3, 2)},  {"conv5_1", make_conv_desc(512, 12, 16, 512, 3, 1)},
          {"conv6", make_conv_desc(512, 12, 16, 1024, 3, 2)}, {"conv6_1", make_conv_desc(1024, 6, 8, 1024, 3, 1)}};
}

void expect_fits(const abi::LayerDesc& d, const BoardProfile& b, const TilePlan& p) {
  abi::LayerDesc x = d;
  apply_plan(x, p);
  EXPECT_TRUE(abi::layer_fits(x)) << p.candidate.tile.m << " " << p.candidate.tile.n << " " << p.candidate.tile.r << " "
                                  << p.candidate.tile.c;
  EXPECT_LE(p.cost.footprint_bytes, b.tile_budget_bytes());
  EXPECT_TRUE(tile_allowed(d, conv_geometry(d), b, p.candidate.tile, true));
}

TEST(TileSearch, ChosenTilesFitTheBudget) {
  for (const std::string& name : board_names()) {
    const BoardProfile b = board(name.c_str());
    std::vector<abi::LayerDesc> layers = small_layers();
    for (const auto& [n, d] : flownet_s()) layers.push_back(d);
    for (const abi::LayerDesc& d : layers) {
      for (bool naive : {false, true}) {
        SearchOptions o;
        o.naive = naive;
        auto p = search_tiles(d, b, o);
        ASSERT_TRUE(p.is_ok()) << p.status().to_string();
        expect_fits(d, b, *p);
      }
    }
  }
}

// Seeds/000 sec. 6: optimal tiling moves far less DDR data than the fullest ("naive") tiling.
// Zynq-7020 board (the paper's), the paper's objective (DDR bytes) and its fixed tiling loop
// (listing 1.1 = input stationary, partial sums back to DDR); the free-schedule optimum is printed too.
TEST(TileSearch, FlowNetSOptimalMovesLessThanNaive) {
  const BoardProfile b = board("zc702");
  SearchOptions opt;
  opt.objective = Objective::kDdrBytes;
  opt.schedule = Schedule::kInputStationary;
  SearchOptions naive = opt;
  naive.naive = true;
  SearchOptions free_opt;
  free_opt.objective = Objective::kDdrBytes;
  double total_opt = 0, total_naive = 0, total_free = 0;
  for (const auto& [name, d] : flownet_s()) {
    auto o = search_tiles(d, b, opt);
    auto n = search_tiles(d, b, naive);
    auto f = search_tiles(d, b, free_opt);
    ASSERT_TRUE(o.is_ok()) << o.status().to_string();
    ASSERT_TRUE(n.is_ok()) << n.status().to_string();
    ASSERT_TRUE(f.is_ok()) << f.status().to_string();
    const auto& ot = o->candidate.tile;
    const auto& nt = n->candidate.tile;
    std::printf(
        "%-8s opt m%u n%u r%u c%u %.2f MB (%.0f%% budget, %.1f ms) | naive m%u n%u r%u c%u %.2f MB (%.0f%%) | "
        "naive/opt %.2f | any-schedule opt %s %.2f MB (%.1f ms)\n",
        name, ot.m, ot.n, ot.r, ot.c, o->cost.ddr_bytes / 1e6, 100.0 * o->cost.footprint_bytes / b.tile_budget_bytes(),
        o->search_ms, nt.m, nt.n, nt.r, nt.c, n->cost.ddr_bytes / 1e6,
        100.0 * n->cost.footprint_bytes / b.tile_budget_bytes(),
        static_cast<double>(n->cost.ddr_bytes) / static_cast<double>(o->cost.ddr_bytes),
        schedule_name(f->candidate.schedule), f->cost.ddr_bytes / 1e6, f->search_ms);
    EXPECT_LE(o->cost.ddr_bytes, n->cost.ddr_bytes) << name;
    EXPECT_LE(f->cost.ddr_bytes, o->cost.ddr_bytes) << name;
    // The naive tiles are the fullest allowed (>= 80% of the budget where the abi caps allow it).
    EXPECT_GE(n->cost.footprint_bytes, o->cost.footprint_bytes) << name;
    total_opt += static_cast<double>(o->cost.ddr_bytes);
    total_naive += static_cast<double>(n->cost.ddr_bytes);
    total_free += static_cast<double>(f->cost.ddr_bytes);
  }
  std::printf("FlowNetS total: opt %.1f MB, naive %.1f MB, naive/opt %.2f; any-schedule opt %.1f MB, naive/it %.2f\n",
              total_opt / 1e6, total_naive / 1e6, total_naive / total_opt, total_free / 1e6, total_naive / total_free);
  EXPECT_GE(total_naive / total_opt, 2.0);
}

// The default search (time objective, burst model) on every board: search time and pruning.
TEST(TileSearch, FlowNetSDefaultSearchPerBoard) {
  for (const std::string& board_name : board_names()) {
    const BoardProfile b = board(board_name.c_str());
    double total_ms = 0;
    for (const auto& [name, d] : flownet_s()) {
      auto p = search_tiles(d, b);
      SearchOptions eo;
      eo.objective = Objective::kEnergy;
      auto e = search_tiles(d, b, eo);
      ASSERT_TRUE(p.is_ok()) << p.status().to_string();
      ASSERT_TRUE(e.is_ok()) << e.status().to_string();
      // Least energy never costs more energy than the fastest plan, and vice versa for time.
      EXPECT_LE(e->cost.energy_uj, p->cost.energy_uj) << name;
      EXPECT_LE(p->cost.total_cycles, e->cost.total_cycles) << name;
      const auto& t = p->candidate.tile;
      std::printf(
          "%-7s %-8s m%u n%u r%u c%u %s/%s %.3f ms %s-bound, %.2f MB, %.1f ms search (%llu costed, %llu pruned)"
          " | min-energy: %.2f MB, %.3f ms, %.0f vs %.0f uJ\n",
          board_name.c_str(), name, t.m, t.n, t.r, t.c, schedule_name(p->candidate.schedule),
          partition_name(p->candidate.partition), p->cost.total_cycles / (b.fabric_clock_mhz * 1e3),
          p->cost.memory_bound ? "memory" : "compute", p->cost.ddr_bytes / 1e6, p->search_ms,
          static_cast<unsigned long long>(p->evaluated), static_cast<unsigned long long>(p->pruned),
          e->cost.ddr_bytes / 1e6, e->cost.total_cycles / (b.fabric_clock_mhz * 1e3), e->cost.energy_uj,
          p->cost.energy_uj);
      EXPECT_GE(p->cost.total_cycles, std::max(p->cost.mac_cycles, p->cost.dram_cycles)) << name;
      EXPECT_GE(p->cost.cus_used, 1u);
      EXPECT_LE(p->cost.cus_used, b.compute_units);
      total_ms += p->search_ms;
    }
    std::printf("%s: FlowNetS searched in %.1f ms\n", board_name.c_str(), total_ms);
  }
}

// TSO (seeds/002 sec. VI): on InceptionV3's 80x73x73 -> 192 3x3 layer the burst model takes
// full-width rows. This kernel caps tile_c at 64 < 73, so full width needs abi_limits = false.
TEST(TileSearch, BurstModelPrefersFullWidthRowsOnTsoLayer) {
  const abi::LayerDesc d = make_conv_desc(80, 73, 73, 192, 3, 1);
  const BoardProfile b = board("zcu102");
  for (bool lim : {false, true}) {
    for (DramModel model : {DramModel::kBurst, DramModel::kVolume}) {
      SearchOptions o;
      o.model = model;
      o.abi_limits = lim;
      auto p = search_tiles(d, b, o);
      ASSERT_TRUE(p.is_ok()) << p.status().to_string();
      const auto& t = p->candidate.tile;
      std::printf("TSO layer %s limits, %s model: m%u n%u r%u c%u %s, %.0f cycles, %llu bursts, %.2f MB, %.1f ms\n",
                  lim ? "abi" : "board-only", model == DramModel::kBurst ? "burst" : "volume", t.m, t.n, t.r, t.c,
                  schedule_name(p->candidate.schedule), p->cost.total_cycles,
                  static_cast<unsigned long long>(p->cost.bursts), p->cost.ddr_bytes / 1e6, p->search_ms);
      if (!lim && model == DramModel::kBurst) {
        EXPECT_EQ(t.c, d.out_w);
      }
    }
  }
}

}  // namespace
}  // namespace tessera::plan
