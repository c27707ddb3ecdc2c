// `tessera plan` as a process: the JSON's totals against its layers, every board, every zoo model,
// the naive and noburst comparisons, the roofline SVG, the plan cache and the errors.
// The zoo's ONNX models come from the make_zoo fixture (tests/reference/CMakeLists.txt).
#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "accel/plan/board_profile.h"
#include "tests/integration/subprocess.h"

namespace tessera::testing {
namespace {

using nlohmann::json;

constexpr milliseconds kPlanTimeout{120000};
const std::filesystem::path kZooDir = TESSERA_ZOO_DIR;
const std::filesystem::path kFashionMnist = std::filesystem::path(TESSERA_SOURCE_DIR) / "models/fashion-mnist";

std::filesystem::path zoo_model(const std::string& name) { return kZooDir / name / "model.onnx"; }

ProcessOutput tessera_plan(std::vector<std::string> args) {
  args.insert(args.begin(), {TESSERA_CLI_PATH, "plan"});
  return run_process(args, kPlanTimeout);
}

// The JSON document of a successful run; null (with a test failure) otherwise.
json plan_json(std::vector<std::string> args) {
  args.emplace_back("--json");
  const ProcessOutput out = tessera_plan(args);
  if (out.exit_status != 0) {
    ADD_FAILURE() << "tessera plan exited " << out.exit_status << ": " << out.err;
    return nullptr;
  }
  try {
    return json::parse(out.out);
  } catch (const json::exception& e) {
    ADD_FAILURE() << "not JSON (" << e.what() << "): " << out.out.substr(0, 400);
    return nullptr;
  }
}

bool near(double a, double b, double rel = 1e-9) { return std::abs(a - b) <= rel * std::max(std::abs(a), std::abs(b)); }

// Totals equal the sums of the layers; images/s = kernel instances / (sum of the layers' time);
// every tile fits.
void expect_consistent(const json& doc) {
  SCOPED_TRACE(doc.value("model", "?") + " on " + doc["board"].value("name", "?"));
  const json& layers = doc.at("layers");
  const json& totals = doc.at("totals");
  ASSERT_FALSE(layers.empty());
  uint64_t ddr = 0, bursts = 0, macs = 0;
  double us = 0, cycles = 0, energy = 0;
  size_t searched = 0;
  for (const json& l : layers) {
    SCOPED_TRACE(l.at("name").get<std::string>());
    ddr += l.at("ddr_bytes").get<uint64_t>();
    bursts += l.at("bursts").get<uint64_t>();
    us += l.at("us").get<double>();
    cycles += l.at("cycles").get<double>();
    energy += l.at("energy_uj").get<double>();
    EXPECT_EQ(l.at("ddr_bytes").get<uint64_t>(),
              l.at("input_bytes").get<uint64_t>() + l.at("weight_bytes").get<uint64_t>() +
                  l.at("quant_bytes").get<uint64_t>() + l.at("output_bytes").get<uint64_t>());
    EXPECT_GT(l.at("us").get<double>(), 0);
    EXPECT_GT(l.at("ocm_use").get<double>(), 0);
    EXPECT_LE(l.at("ocm_use").get<double>(), 1.0);
    EXPECT_LE(l.at("footprint_bytes").get<uint64_t>(), l.at("budget_bytes").get<uint64_t>());
    EXPECT_EQ(l.at("budget_bytes").get<uint64_t>(), doc["board"].at("tile_budget_bytes").get<uint64_t>());
    if (l.at("searched").get<bool>()) {
      ++searched;
      macs += l.at("macs").get<uint64_t>();
      const double util = l.at("mac_utilization").get<double>();
      EXPECT_GT(util, 0);
      EXPECT_LE(util, 1.0 + 1e-12);
      EXPECT_TRUE(l.at("schedule").is_string());
    } else {
      EXPECT_TRUE(l.at("mac_utilization").is_null());
    }
  }
  EXPECT_EQ(totals.at("layers").get<size_t>(), layers.size());
  EXPECT_EQ(totals.at("searched_layers").get<size_t>(), searched);
  EXPECT_EQ(totals.at("ddr_bytes").get<uint64_t>(), ddr);
  EXPECT_EQ(totals.at("bursts").get<uint64_t>(), bursts);
  EXPECT_EQ(totals.at("macs").get<uint64_t>(), macs);
  EXPECT_TRUE(near(totals.at("us").get<double>(), us)) << totals.at("us") << " vs " << us;
  EXPECT_TRUE(near(totals.at("cycles").get<double>(), cycles));
  // Kernel instances run batches side by side: images/s = instances / one image's time, and they
  // share the static power (an image's energy is the layers' less that share).
  const double instances = doc["board"].at("kernel_instances").get<double>();
  if (instances == 1) {
    EXPECT_TRUE(near(totals.at("energy_uj").get<double>(), energy));
  } else {
    EXPECT_LT(totals.at("energy_uj").get<double>(), energy);
  }
  EXPECT_TRUE(near(totals.at("images_per_second").get<double>(), instances * 1e6 / us))
      << totals.at("images_per_second");
  // GOP/s = 2 x MACs per image x images/s, within the fabric's peak.
  EXPECT_TRUE(
      near(totals.at("gops").get<double>(), 2.0 * static_cast<double>(macs) * instances * 1e6 / us / 1e9, 1e-6));
  EXPECT_LE(totals.at("gops").get<double>(), totals.at("peak_gops").get<double>());
  EXPECT_TRUE(near(totals.at("peak_gops").get<double>(), doc["board"].at("peak_gops").get<double>()));
}

// A fresh directory under the system's temp dir, removed with the fixture.
class PlanCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tessera-plan-test-" + std::to_string(getpid()) + "-" + std::to_string(std::random_device{}()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  // Fails the test when the make_zoo fixture did not make `name`.
  void require_zoo(const std::string& name) {
    ASSERT_TRUE(std::filesystem::exists(zoo_model(name)))
        << "missing " << zoo_model(name) << " (made by tools/make_zoo.py, the make_zoo CTest fixture)";
  }
  std::filesystem::path dir_;
};

TEST_F(PlanCliTest, FashionMnistJsonOnEveryBoardAddsUp) {
  const std::vector<std::string> boards = plan::board_names();
  ASSERT_GE(boards.size(), 5u);
  for (const std::string& board : boards) {
    const json doc = plan_json({kFashionMnist.string(), "--board", board, "--no-plan-cache"});
    ASSERT_TRUE(doc.is_object()) << board;
    EXPECT_EQ(doc["board"]["name"], board);
    EXPECT_EQ(doc["model"], "fashion-mnist");
    EXPECT_EQ(doc["options"]["space"], "kernel");
    EXPECT_EQ(doc["options"]["dram"], "burst");
    EXPECT_FALSE(doc["from_cache"].get<bool>());
    EXPECT_FALSE(doc.contains("comparison"));
    expect_consistent(doc);
  }
}

TEST_F(PlanCliTest, BoardAllPrintsOneSectionPerBoard) {
  const std::vector<std::string> boards = plan::board_names();
  const ProcessOutput text = tessera_plan({kFashionMnist.string(), "--board", "all", "--no-plan-cache"});
  ASSERT_EQ(text.exit_status, 0) << text.err;
  for (const std::string& board : boards) {
    EXPECT_NE(text.out.find(") on " + board + ": "), std::string::npos) << board << "\n" << text.out;
    EXPECT_NE(text.out.find("  board       " + board + ", fabric clock "), std::string::npos) << board;
  }
  EXPECT_NE(text.out.find("modeled from the board profile"), std::string::npos);

  const json all = plan_json({kFashionMnist.string(), "--board", "all", "--no-plan-cache"});
  ASSERT_TRUE(all.is_object());
  ASSERT_EQ(all["plans"].size(), boards.size());
  for (size_t i = 0; i < boards.size(); ++i) {
    EXPECT_EQ(all["plans"][i]["board"]["name"], boards[i]);
    expect_consistent(all["plans"][i]);
  }
}

TEST_F(PlanCliTest, TheTableHasARowPerLayerAndTheTotals) {
  const json doc = plan_json({kFashionMnist.string(), "--no-plan-cache"});
  ASSERT_TRUE(doc.is_object());
  const ProcessOutput out = tessera_plan({kFashionMnist.string(), "--no-plan-cache"});
  ASSERT_EQ(out.exit_status, 0) << out.err;
  EXPECT_NE(out.out.find("tile m/n/r/c"), std::string::npos) << out.out;
  for (const json& l : doc["layers"]) EXPECT_NE(out.out.find(l["name"].get<std::string>()), std::string::npos);
  EXPECT_NE(out.out.find("images/s modeled"), std::string::npos);
  EXPECT_NE(out.out.find("mJ/image"), std::string::npos);
  EXPECT_NE(out.out.find("zcu102, fabric clock 300 MHz"), std::string::npos);  // the default board
}

TEST_F(PlanCliTest, EveryZooModelPlansOnZcu102AndAwsF1) {
  for (const std::string model : {"squeezenet1_1", "resnet18", "googlenet", "mobilenet_v2", "alexnet", "resnet50"}) {
    require_zoo(model);
    for (const std::string board : {"zcu102", "aws-f1"}) {
      const auto start = std::chrono::steady_clock::now();
      const json doc = plan_json({zoo_model(model).string(), "--board", board, "--no-plan-cache"});
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      ASSERT_TRUE(doc.is_object()) << model << " on " << board;
      std::printf(
          "[ plan ] %-14s on %-7s %3zu layers, %8.1f images/s modeled, planned in %.2f s "
          "(tile search %.0f ms)\n",
          model.c_str(), board.c_str(), doc["layers"].size(), doc["totals"]["images_per_second"].get<double>(), seconds,
          doc["totals"]["search_ms"].get<double>());
      EXPECT_EQ(doc["model"], model);  // "<name>/model.onnx" shows the folder's name
      EXPECT_GT(doc["totals"]["searched_layers"].get<size_t>(), 0u);
      expect_consistent(doc);
    }
  }
}

// SqueezeNet's first convolution (3 input channels, a 3x3 window) is planned with its window
// folded into the MAC vector; the JSON marks exactly the folded tiles and the table shows each.
TEST_F(PlanCliTest, FoldedWindowsAreShownInJsonAndTable) {
  require_zoo("squeezenet1_1");
  const std::vector<std::string> args = {zoo_model("squeezenet1_1").string(), "--no-plan-cache"};
  std::vector<std::string> json_args = args;
  json_args.emplace_back("--json");
  const ProcessOutput json_out = tessera_plan(json_args);
  ASSERT_EQ(json_out.exit_status, 0) << json_out.err;
  const json doc = json::parse(json_out.out);
  size_t folded = 0;
  for (const json& l : doc["layers"]) {
    if (!l["tile"].at("fold_rows").get<bool>()) continue;
    ++folded;
    EXPECT_EQ(l["op"].get<std::string>().rfind("conv", 0), 0u) << l["name"];  // conv or conv+pool
    EXPECT_TRUE(l["searched"].get<bool>()) << l["name"];
  }
  EXPECT_TRUE(doc["layers"][0]["tile"]["fold_rows"].get<bool>()) << doc["layers"][0];
  const ProcessOutput table = tessera_plan(args);
  ASSERT_EQ(table.exit_status, 0) << table.err;
  size_t shown = 0;
  for (size_t at = table.out.find(" fold "); at != std::string::npos; at = table.out.find(" fold ", at + 1)) ++shown;
  EXPECT_EQ(shown, folded) << table.out;
  EXPECT_NE(table.out.find("fold: the kernel window folded into the MAC vector"), std::string::npos);
}

// Naive tiles (seeds/000) never move fewer DDR bytes than the search with objective "bytes",
// which minimises exactly that over a set holding the naive tiles. (With "energy", the default,
// a layer may move a little less data naively: the search then also pays for time.)
TEST_F(PlanCliTest, CompareNaiveMovesAtLeastAsManyBytesOnEveryLayer) {
  for (const std::string model : {"squeezenet1_1", "resnet50"}) {
    require_zoo(model);
    const json doc = plan_json({zoo_model(model).string(), "--board", "zcu102", "--objective", "bytes", "--compare",
                                "naive", "--no-plan-cache"});
    ASSERT_TRUE(doc.is_object()) << model;
    EXPECT_EQ(doc["options"]["objective"], "bytes");
    const json& cmp = doc.at("comparison");
    EXPECT_EQ(cmp["kind"], "naive");
    ASSERT_EQ(cmp["layers"].size(), doc["layers"].size());
    bool some_layer_differs = false;
    for (size_t i = 0; i < doc["layers"].size(); ++i) {
      const json& l = cmp["layers"][i];
      SCOPED_TRACE(model + " layer " + std::to_string(i));
      EXPECT_EQ(l["ddr_bytes"], doc["layers"][i]["ddr_bytes"]);
      EXPECT_GE(l["other_ddr_bytes"].get<uint64_t>(), l["ddr_bytes"].get<uint64_t>());
      EXPECT_GE(l["ddr_ratio"].get<double>(), 1.0);
      some_layer_differs |= l["other_ddr_bytes"] != l["ddr_bytes"];
    }
    EXPECT_TRUE(some_layer_differs) << model << ": the naive tiles equal the optimum everywhere";
    EXPECT_GE(cmp["totals"]["other_ddr_bytes"].get<uint64_t>(), doc["totals"]["ddr_bytes"].get<uint64_t>());
    EXPECT_TRUE(near(cmp["totals"]["us"].get<double>(), doc["totals"]["us"].get<double>()));
  }
  const ProcessOutput text = tessera_plan(
      {zoo_model("squeezenet1_1").string(), "--objective", "bytes", "--compare", "naive", "--no-plan-cache"});
  ASSERT_EQ(text.exit_status, 0) << text.err;
  EXPECT_NE(text.out.find("naive tiling (seeds/000"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("  naive: DDR "), std::string::npos) << text.out;
}

// TSO's comparison (seeds/002): tiles picked by the volume-only DRAM model, timed with bursts, are
// never faster than the burst-aware choice with objective "time" (it minimises that very time).
TEST_F(PlanCliTest, CompareNoburstIsNeverFasterOnAnyLayer) {
  for (const std::string model : {"squeezenet1_1", "resnet50"}) {
    require_zoo(model);
    const json doc = plan_json({zoo_model(model).string(), "--board", "zcu102", "--objective", "time", "--compare",
                                "noburst", "--no-plan-cache"});
    ASSERT_TRUE(doc.is_object()) << model;
    const json& cmp = doc.at("comparison");
    EXPECT_EQ(cmp["kind"], "noburst");
    ASSERT_EQ(cmp["layers"].size(), doc["layers"].size());
    for (size_t i = 0; i < doc["layers"].size(); ++i) {
      const json& l = cmp["layers"][i];
      SCOPED_TRACE(model + " layer " + std::to_string(i));
      EXPECT_TRUE(near(l["us"].get<double>(), doc["layers"][i]["us"].get<double>()));
      EXPECT_LE(l["us"].get<double>(), l["other_us"].get<double>() * (1 + 1e-12));
      EXPECT_GE(l["slower_percent"].get<double>(), -1e-9);
    }
    EXPECT_GE(cmp["totals"]["slower_percent"].get<double>(), -1e-9);
    std::printf("[ plan ] %s on zcu102: TSO-noburst tiles %.1f%% slower in total\n", model.c_str(),
                cmp["totals"]["slower_percent"].get<double>());
  }
  const ProcessOutput text = tessera_plan(
      {zoo_model("squeezenet1_1").string(), "--objective", "time", "--compare", "noburst", "--no-plan-cache"});
  ASSERT_EQ(text.exit_status, 0) << text.err;
  EXPECT_NE(text.out.find("slower in total"), std::string::npos) << text.out;
}

TEST_F(PlanCliTest, RooflineIsSelfContainedSvgWithOnePointPerConvLayer) {
  require_zoo("squeezenet1_1");
  if (!std::filesystem::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3 to parse the SVG";
  const std::filesystem::path svg = dir_ / "roofline.svg";
  const json doc = plan_json(
      {zoo_model("squeezenet1_1").string(), "--roofline", svg.string(), "--plan-cache", (dir_ / "c").string()});
  ASSERT_TRUE(doc.is_object());
  ASSERT_TRUE(std::filesystem::exists(svg));
  // Points as "index:class" in document order, then the text of every <text>.
  const char* script = R"PY(
import sys, xml.etree.ElementTree as ET
ns = '{http://www.w3.org/2000/svg}'
root = ET.parse(sys.argv[1]).getroot()
if root.tag != ns + 'svg': sys.exit('root is ' + root.tag)
for el in root.iter():
    tag = el.tag.replace(ns, '')
    if tag in ('script', 'image', 'foreignObject', 'use', 'a', 'style'): sys.exit('forbidden <%s>' % tag)
    for k, v in el.attrib.items():
        if 'href' in k or 'url(' in v or k.startswith('on'): sys.exit('external or active attribute ' + k)
print(' '.join('%s:%s' % (c.get('data-layer'), c.get('class')) for c in root.iter(ns + 'circle') if c.get('data-layer') is not None))
print(' | '.join((t.text or '') for t in root.iter(ns + 'text')))
)PY";
  const ProcessOutput parsed = run_process({"/usr/bin/python3", "-c", script, svg.string()}, kPlanTimeout);
  ASSERT_EQ(parsed.exit_status, 0) << parsed.err;
  std::istringstream lines(parsed.out);
  std::string points, texts;
  std::getline(lines, points);
  std::getline(lines, texts);
  std::string expected;
  for (const json& l : doc["layers"]) {
    if (!l["searched"].get<bool>()) continue;  // pool/add layers are omitted
    if (!expected.empty()) expected += ' ';
    expected += std::to_string(l["index"].get<size_t>());
    expected += l["bound"] == "memory" ? ":layer conv memory-bound" : ":layer conv compute-bound";
  }
  EXPECT_EQ(points, expected);
  EXPECT_NE(texts.find("Roofline: squeezenet1_1 on zcu102"), std::string::npos) << texts;
  EXPECT_NE(texts.find("operational intensity"), std::string::npos) << texts;
  EXPECT_NE(texts.find("GOP/s"), std::string::npos) << texts;
  EXPECT_NE(texts.find("compute-bound conv"), std::string::npos) << texts;
  // Decade tick labels on both axes.
  EXPECT_NE(texts.find(" | 10 | 100 | "), std::string::npos) << texts;
  // No temporary file left beside it.
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_)) files += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(files, 1u);
}

TEST_F(PlanCliTest, RooflineThatCannotBeWrittenIsAnErrorNamingThePath) {
  const std::string path = (dir_ / "no/such/dir/roofline.svg").string();
  const ProcessOutput out = tessera_plan({kFashionMnist.string(), "--roofline", path, "--no-plan-cache"});
  EXPECT_EQ(out.exit_status, 1);
  EXPECT_NE(out.err.find(path), std::string::npos) << out.err;
}

TEST_F(PlanCliTest, SecondRunComesFromTheCacheWithIdenticalLayers) {
  require_zoo("squeezenet1_1");
  const std::string cache = (dir_ / "plans").string();
  const std::vector<std::string> args = {zoo_model("squeezenet1_1").string(), "--board", "zc706", "--plan-cache",
                                         cache};
  const json first = plan_json(args);
  const json second = plan_json(args);
  ASSERT_TRUE(first.is_object() && second.is_object());
  EXPECT_FALSE(first["from_cache"].get<bool>());
  EXPECT_TRUE(second["from_cache"].get<bool>());
  EXPECT_TRUE(second["totals"]["from_cache"].get<bool>());
  EXPECT_EQ(first["layers"], second["layers"]);
  EXPECT_EQ(second["totals"]["search_ms"].get<double>(), 0.0);
  EXPECT_FALSE(std::filesystem::is_empty(cache));

  const ProcessOutput text = tessera_plan(args);
  ASSERT_EQ(text.exit_status, 0) << text.err;
  EXPECT_NE(text.out.find("from cache " + cache), std::string::npos) << text.out;

  // --no-plan-cache searches again, to the same choices.
  const json fresh = plan_json({zoo_model("squeezenet1_1").string(), "--board", "zc706", "--no-plan-cache"});
  ASSERT_TRUE(fresh.is_object());
  EXPECT_FALSE(fresh["from_cache"].get<bool>());
  EXPECT_EQ(fresh["layers"], first["layers"]);
}

TEST_F(PlanCliTest, UnknownBoardExits1WithTheListOfBoards) {
  const ProcessOutput out = tessera_plan({kFashionMnist.string(), "--board", "zc999", "--no-plan-cache"});
  EXPECT_EQ(out.exit_status, 1);
  EXPECT_NE(out.err.find("unknown board 'zc999'"), std::string::npos) << out.err;
  for (const std::string& board : plan::board_names()) EXPECT_NE(out.err.find(board), std::string::npos) << out.err;
  EXPECT_TRUE(out.out.empty()) << out.out;
}

TEST_F(PlanCliTest, MissingOrMalformedModelExits1WithTheImportersMessage) {
  const std::string missing = (dir_ / "no_such_model.onnx").string();
  const ProcessOutput none = tessera_plan({missing, "--no-plan-cache"});
  EXPECT_EQ(none.exit_status, 1);
  EXPECT_NE(none.err.find("cannot open ONNX model " + missing), std::string::npos) << none.err;

  const std::filesystem::path garbage = dir_ / "garbage.onnx";
  std::ofstream(garbage) << "this is not a protobuf\n";
  const ProcessOutput bad = tessera_plan({garbage.string(), "--no-plan-cache"});
  EXPECT_EQ(bad.exit_status, 1);
  EXPECT_NE(bad.err.find(garbage.string()), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("not a valid ONNX model"), std::string::npos) << bad.err;

  const ProcessOutput folder = tessera_plan({dir_.string(), "--no-plan-cache"});
  EXPECT_EQ(folder.exit_status, 1);
  EXPECT_NE(folder.err.find("model.toml"), std::string::npos) << folder.err;
}

}  // namespace
}  // namespace tessera::testing
