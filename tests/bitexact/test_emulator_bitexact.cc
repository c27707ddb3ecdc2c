// The emulator (accel/device/emu) against its reference twin, the HLS kernel compiled as C
// simulation (kernels/tessera_accel.cpp): hundreds of random valid layers and a few small
// networks, run by both on identical arenas, must leave byte-identical arenas. Each suite runs
// once per version of the emulator's inner loops (emu::kernel_paths: AVX-512 VNNI, AVX-VNNI,
// AVX2, NEON dot product, NEON with 2 threads, the portable loops with 3), named by the version's
// id (.../avx512_vnni); a version this build or CPU lacks is skipped with the reason, so a cross
// build under qemu checks both NEON versions too. Seeded: set TESSERA_BITEXACT_SEED to replay a run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <set>

#include "accel/device/emu/emu_device.h"
#include "accel/device/emu/emu_kernels.h"
#include "accel/plan/model_plan.h"
#include "kernels/tessera_accel.h"
#include "random_programs.h"

// gtest names a parameter by its value: the version's id (argument-dependent lookup finds it here).
namespace tessera::emu {
void PrintTo(const KernelPath& path, std::ostream* os) { *os << path.id; }
}  // namespace tessera::emu

namespace tessera::bitexact {
namespace {

uint64_t base_seed() {
  static const uint64_t seed = [] {
    const char* env = std::getenv("TESSERA_BITEXACT_SEED");
    const uint64_t s = env != nullptr ? std::strtoull(env, nullptr, 0) : 20240611u;
    std::printf("emulator_bitexact_tests: seed %llu (TESSERA_BITEXACT_SEED=%llu replays it)\n",
                static_cast<unsigned long long>(s), static_cast<unsigned long long>(s));
    return s;
  }();
  return seed;
}

// The kernel C simulation on a copy of the case's arena.
std::vector<int8_t> run_kernel(const BitexactCase& c) {
  std::vector<int8_t> arena = c.arena;
  const std::vector<uint32_t> words = c.program.program_words(c.batch);
  uint32_t status[abi::kStatusWords] = {0xFFFFFFFFu, 0xFFFFFFFFu};
  tessera_accel(words.data(), c.program.weights.data(), c.program.quant.data(), arena.data(), status);
  EXPECT_EQ(status[0], abi::kRunOk) << "kernel refused layer " << status[1] << " of " << c.name;
  return arena;
}

// The emulator on a copy of the case's arena (EmuProgram::execute: the kernel's view).
std::vector<int8_t> run_emulator(EmuDevice& device, const BitexactCase& c) {
  std::vector<int8_t> arena = c.arena;
  auto loaded = device.load_program(c.program, c.batch);
  EXPECT_TRUE(loaded.is_ok()) << loaded.status().to_string() << "\n" << c.name;
  if (!loaded.is_ok()) return {};
  const Status status = loaded.value()->execute(arena, c.batch);
  EXPECT_TRUE(status.is_ok()) << status.to_string();
  return arena;
}

std::string first_difference(const BitexactCase& c, const std::vector<int8_t>& want, const std::vector<int8_t>& got) {
  if (want.size() != got.size()) return "arena sizes differ";
  size_t differing = 0, first = want.size();
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] != got[i]) {
      if (differing++ == 0) first = i;
    }
  }
  const uint32_t image_bytes = c.program.header.arena_image_bytes;
  return std::to_string(differing) + " bytes differ; first: image " + std::to_string(first / image_bytes) +
         ", offset " + std::to_string(first % image_bytes) + ": kernel " + std::to_string(want[first]) + ", emulator " +
         std::to_string(got[first]);
}

// An emulator on one version of the inner loops (the portable ones with 3 threads, to split
// layers unevenly; the others with 2).
std::unique_ptr<EmuDevice> device_on(const emu::EmuKernels& kernels) {
  EmuDeviceOptions options;
  options.threads = &kernels == &emu::scalar_kernels() ? 3 : 2;
  options.kernels = &kernels;
  return std::make_unique<EmuDevice>("zcu102", options);
}

// The kernel's arena for case `index` of the generator seeded `seed`, computed once: every
// version's run of a suite sees the same cases, and the C simulation is the slow side. The case's
// name is part of the key: two suites with the same salt (the stem and small-map suites had one)
// would otherwise read each other's arenas when they run in one process.
const std::vector<int8_t>& kernel_result(uint64_t seed, int index, const BitexactCase& c) {
  static std::map<std::tuple<uint64_t, int, std::string>, std::vector<int8_t>> cache;
  auto [it, added] = cache.try_emplace({seed, index, c.name});
  if (added) it->second = run_kernel(c);
  return it->second;
}

int case_divisor() {
  const char* text = std::getenv("TESSERA_BITEXACT_DIVISOR");
  const int divisor = text == nullptr ? 1 : std::atoi(text);
  return divisor >= 1 ? divisor : 1;
}

// The suites that compare the emulator with the kernel, once per version of the inner loops.
class BitexactPathTest : public ::testing::TestWithParam<emu::KernelPath> {
 protected:
  void SetUp() override {
    if (GetParam().kernels == nullptr) GTEST_SKIP() << GetParam().missing;
    device_ = device_on(*GetParam().kernels);
  }

  // Checks `count` cases from `make` on this version (the first count / TESSERA_BITEXACT_DIVISOR of
  // them where that is set: the ASan + UBSan suite, tools/sanitize.sh, which checks every path and
  // suite for memory errors on a quarter of the cases the Release suite compares).
  void check(uint64_t salt, BitexactCase (CaseGenerator::*make)(), int count) {
    count = std::max(1, count / case_divisor());
    const uint64_t seed = base_seed() ^ salt;
    SCOPED_TRACE("seed " + std::to_string(base_seed()));
    CaseGenerator generator(seed);
    int passed = 0, failures = 0;
    for (int i = 0; i < count && failures < 5; ++i) {
      const BitexactCase c = (generator.*make)();
      const std::vector<int8_t>& want = kernel_result(seed, i, c);
      const std::vector<int8_t> got = run_emulator(*device_, c);
      if (got == want) {
        ++passed;
      } else {
        ++failures;
        ADD_FAILURE() << "case " << i << " on " << device_->info().name << ": " << first_difference(c, want, got)
                      << "\n"
                      << c.name;
      }
    }
    // Which version was checked (the cross runs' logs show NEON's count).
    std::printf("%d of %d cases bit-exact on the %s\n", passed, count, device_->info().name.c_str());
  }

  std::unique_ptr<EmuDevice> device_;
};

// The default emulator, for the tests of loading and running that do not depend on the version.
class BitexactTest : public ::testing::Test {
 protected:
  EmuDevice fast_;
};

TEST_P(BitexactPathTest, RandomConvLayers) { check(0x1, &CaseGenerator::conv_case, 400); }

TEST_P(BitexactPathTest, RandomWindowFoldLayers) { check(0x5, &CaseGenerator::fold_case, 120); }

TEST_P(BitexactPathTest, RandomSpreadLayers) { check(0x6, &CaseGenerator::spread_case, 120); }

TEST_P(BitexactPathTest, RandomThinLargeLayers) { check(0x7, &CaseGenerator::thin_case, 12); }

TEST_P(BitexactPathTest, RandomQuadChannelLayers) { check(0x8, &CaseGenerator::quad_case, 150); }

TEST_P(BitexactPathTest, RandomSmallMapBatchLayers) { check(0xA, &CaseGenerator::small_map_case, 120); }

TEST_P(BitexactPathTest, RandomDepthwiseLayers) { check(0x9, &CaseGenerator::depthwise_case, 150); }
TEST_P(BitexactPathTest, RandomStemLayers) { check(0xB, &CaseGenerator::stem_case, 120); }

TEST_P(BitexactPathTest, RandomPoolLayers) { check(0x2, &CaseGenerator::pool_case, 80); }

TEST_P(BitexactPathTest, RandomAddLayers) { check(0x3, &CaseGenerator::add_case, 50); }

TEST_P(BitexactPathTest, RandomNetworksBatch3) { check(0x4, &CaseGenerator::network_case, 10); }

// DeviceProgram::run (input in, output out) agrees with the kernel's arena.
TEST_F(BitexactTest, RunCopiesInputAndOutput) {
  CaseGenerator generator(base_seed() ^ 0x5);
  BitexactCase c = generator.network_case();
  const std::vector<int8_t> want = run_kernel(c);
  auto board = plan::load_board_profile("zcu102");
  ASSERT_TRUE(board.is_ok()) << board.status().to_string();
  const std::vector<std::string> names(c.program.layers.size(), "layer");
  auto planned = plan::plan_layers(c.program.layers, names, *board);
  ASSERT_TRUE(planned.is_ok()) << planned.status().to_string();
  c.program.model = plan::program_model(*planned);
  const CompiledProgram& p = c.program;
  const uint32_t image_bytes = p.header.arena_image_bytes;
  std::vector<int8_t> inputs(static_cast<size_t>(c.batch) * p.input_bytes());
  for (uint32_t n = 0; n < c.batch; ++n) {
    std::copy_n(c.arena.begin() + n * image_bytes + p.header.input_offset, p.input_bytes(),
                inputs.begin() + n * p.input_bytes());
  }
  auto loaded = fast_.load(p, 4);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  std::vector<int8_t> outputs(static_cast<size_t>(c.batch) * p.output_bytes());
  ASSERT_TRUE(loaded.value()->run(inputs, c.batch, outputs, std::chrono::milliseconds(10000)).is_ok());
  for (uint32_t n = 0; n < c.batch; ++n) {
    const std::vector<int8_t> expected(want.begin() + n * image_bytes + p.header.output_offset,
                                       want.begin() + n * image_bytes + p.header.output_offset + p.output_bytes());
    const std::vector<int8_t> got(outputs.begin() + n * p.output_bytes(), outputs.begin() + (n + 1) * p.output_bytes());
    EXPECT_EQ(got, expected) << "image " << n;
  }
  // The modeled cycles are the plan's, for every image of the batch.
  EXPECT_GT(loaded.value()->last_run_cycles(), 0u);
  EXPECT_EQ(loaded.value()->last_run_cycles(), p.model.cycles(c.batch));
}

// Whatever tiles the planner picks (any board, objective, naive or searched), the kernel, which
// executes the tiles step by step, and the emulator leave the same bytes.
TEST_P(BitexactPathTest, PlannedTilesNeverChangeTheResult) {
  // The five profiles, plus zcu102 with on-chip memory cut down so that these small networks
  // must be split into many tiles.
  std::vector<plan::BoardProfile> boards;
  for (const std::string& name : plan::board_names()) {
    auto board = plan::load_board_profile(name);
    ASSERT_TRUE(board.is_ok()) << board.status().to_string();
    boards.push_back(*board);
  }
  for (uint64_t divisor : {16, 64}) {
    plan::BoardProfile small = boards.back();
    small.name = "small-ocm/" + std::to_string(divisor);
    small.input_buffer_bytes /= divisor;
    small.weight_buffer_bytes /= divisor;
    small.output_buffer_bytes /= divisor;
    boards.push_back(small);
  }
  CaseGenerator generator(base_seed() ^ 0x7);
  int plans = 0;  // the kernel_result key of each planned case
  for (int round = 0; round < 3; ++round) {
    const BitexactCase base = generator.network_case();
    const std::vector<int8_t>& want = kernel_result(base_seed() ^ 0x70000, round, base);
    const std::vector<std::string> names(base.program.layers.size(), "layer");
    std::set<std::vector<uint32_t>> tilings;
    for (const plan::BoardProfile& board : boards) {
      const std::string& board_name = board.name;
      for (plan::Objective objective : {plan::Objective::kTime, plan::Objective::kDdrBytes, plan::Objective::kEnergy}) {
        for (bool naive : {false, true}) {
          plan::PlanOptions options;
          options.objective = objective;
          options.naive = naive;
          auto planned = plan::plan_layers(base.program.layers, names, board, options);
          ASSERT_TRUE(planned.is_ok()) << planned.status().to_string();
          BitexactCase c = base;
          std::vector<uint32_t> tiling;
          for (size_t i = 0; i < c.program.layers.size(); ++i) {
            c.program.layers[i] = planned->layers[i].desc;
            const abi::LayerDesc& d = c.program.layers[i];
            tiling.insert(tiling.end(), {d.tile_m, d.tile_n, d.tile_r, d.tile_c});
          }
          tilings.insert(tiling);
          const std::string what = c.name + " planned for " + board_name + (naive ? " (naive)" : "");
          EXPECT_EQ(kernel_result(base_seed() ^ 0x70001, plans++, c), want) << what;
          EXPECT_EQ(run_emulator(*device_, c), want) << what << " on " << device_->info().name;
        }
      }
    }
    // The plans really differ, or the test would prove nothing.
    EXPECT_GT(tilings.size(), 2u) << base.name;
  }
}

TEST_F(BitexactTest, LoadRefusesInvalidDescriptorNamingTheLayer) {
  CaseGenerator generator(base_seed() ^ 0x6);
  BitexactCase c = generator.network_case();
  c.program.layers[2].tile_m = abi::kMaxTileM + 1;  // over the synthesised MAC lanes
  auto loaded = fast_.load(c.program, 1);
  ASSERT_FALSE(loaded.is_ok());
  EXPECT_EQ(loaded.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(loaded.status().message().find("layer 2 (conv)"), std::string::npos) << loaded.status().message();
  // The kernel gives the same verdict on the same layer.
  std::vector<int8_t> arena = c.arena;
  const std::vector<uint32_t> words = c.program.program_words(1);
  uint32_t status[abi::kStatusWords] = {};
  tessera_accel(words.data(), c.program.weights.data(), c.program.quant.data(), arena.data(), status);
  EXPECT_EQ(status[0], abi::kRunBadLayer);
  EXPECT_EQ(status[1], 2u);
}

TEST_F(BitexactTest, LoadRefusesTensorsOutsideTheArena) {
  CaseGenerator generator(base_seed() ^ 0x7);
  BitexactCase c = generator.add_case();
  c.program.layers[0].out_offset = c.program.header.arena_image_bytes;
  auto loaded = fast_.load(c.program, 1);
  ASSERT_FALSE(loaded.is_ok());
  EXPECT_EQ(loaded.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(loaded.status().message().find("layer 0 (add)"), std::string::npos) << loaded.status().message();
}

TEST_F(BitexactTest, RunRefusesBatchOverMaxBatch) {
  CaseGenerator generator(base_seed() ^ 0x8);
  const BitexactCase c = generator.network_case();
  auto loaded = fast_.load(c.program, 2);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  std::vector<int8_t> inputs(3 * c.program.input_bytes()), outputs(3 * c.program.output_bytes());
  const Status status = loaded.value()->run(inputs, 3, outputs, std::chrono::milliseconds(1000));
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("max_batch"), std::string::npos) << status.message();
  // The program stays usable.
  EXPECT_TRUE(loaded.value()->run(inputs, 2, outputs, std::chrono::milliseconds(10000)).is_ok());
}

// The name a version's tests carry: its id with '-' as '_' (avx512_vnni, avx_vnni, ...).
std::string path_test_name(const ::testing::TestParamInfo<emu::KernelPath>& path) {
  std::string name = path.param.id;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

INSTANTIATE_TEST_SUITE_P(EveryVersion, BitexactPathTest, ::testing::ValuesIn(emu::kernel_paths()), path_test_name);

}  // namespace
}  // namespace tessera::bitexact
