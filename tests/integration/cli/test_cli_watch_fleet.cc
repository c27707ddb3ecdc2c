// `tessera watch`, `tessera fleet` and `tessera classify` of folders against real daemons.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>

#include "tests/integration/cli_test_util.h"
#include "tests/integration/daemon_test.h"
#include "tests/integration/raw_connection.h"

namespace tessera::testing {
namespace {

using nlohmann::json;

class CliWatchFleetTest : public DaemonTest {
 protected:
  std::vector<std::string> extra_args() const override { return {"--telemetry-interval-ms", "100"}; }

  void SetUp() override {
    DaemonTest::SetUp();
    images_ = load_fmnist_images();
    ASSERT_GE(images_.size(), 4u) << "no images in " << TESSERA_FMNIST_DIR;
  }

  std::vector<FmnistImage> images_;
};

TEST_F(CliWatchFleetTest, WatchJsonPrintsCountSnapshots) {
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(classify_grpc(*stub_, read_binary(images_[static_cast<size_t>(i)].png)).status.ok());
  const auto start = std::chrono::steady_clock::now();
  const ProcessOutput out =
      run_tessera({"watch", "--server", daemon_->grpc_address(), "--count", "3", "--interval", "100", "--json"});
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(out.exit_status, 0) << out.err;
  const std::vector<json> lines = json_lines(out.out);
  ASSERT_EQ(lines.size(), 3u) << out.out;
  for (const json& s : lines) {
    EXPECT_EQ(s["device_kind"], "emu");
    EXPECT_TRUE(s["power_watts"].is_number()) << s;
    EXPECT_EQ(s["power_source"], "model");
    EXPECT_TRUE(s["ready"].get<bool>());
    ASSERT_EQ(s["models"].size(), 1u);
    EXPECT_EQ(s["models"][0]["name"], "fashion-mnist");
    EXPECT_GE(s["models"][0]["requests_ok"].get<uint64_t>(), 3u);
    EXPECT_FALSE(s["models"][0]["batch_sizes"].empty());
  }
  EXPECT_LE(lines[0]["time_unix_ms"].get<int64_t>(), lines[2]["time_unix_ms"].get<int64_t>());
  EXPECT_LE(lines[0]["energy_joules"].get<double>(), lines[2]["energy_joules"].get<double>());
  EXPECT_LT(wall, 20.0);
}

TEST_F(CliWatchFleetTest, WatchTextDrawsTheDashboard) {
  ASSERT_TRUE(classify_grpc(*stub_, read_binary(images_[0].png)).status.ok());
  const ProcessOutput out =
      run_tessera({"watch", "--server", daemon_->grpc_address(), "--count", "2", "--interval", "100"});
  ASSERT_EQ(out.exit_status, 0) << out.err;
  for (const char* needle : {"snapshot 1", "snapshot 2", "device       emu", "power", " W (model)", "energy",
                             "images/s", "queue", "model fashion-mnist", "batch sizes", "|#", "total"}) {
    EXPECT_NE(out.out.find(needle), std::string::npos) << needle << "\n" << out.out;
  }
  EXPECT_EQ(out.out.find("\033["), std::string::npos) << "no ANSI codes when stdout is not a terminal";
}

TEST_F(CliWatchFleetTest, WatchEndsCleanlyOnSigint) {
  ChildProcess watch({TESSERA_CLI_PATH, "watch", "--server", daemon_->grpc_address(), "--interval", "100", "--json"});
  ASSERT_TRUE(watch.started());
  ASSERT_TRUE(watch.read_line(milliseconds(10000)).has_value()) << "no first snapshot";
  watch.send_signal(SIGINT);
  const std::optional<int> status = watch.wait(milliseconds(10000));
  ASSERT_TRUE(status.has_value()) << "watch did not stop on SIGINT";
  EXPECT_EQ(*status, 0);
}

TEST_F(CliWatchFleetTest, FleetMarksTheDeadBoardDownAndExitsZero) {
  TesseradProcess second;
  ASSERT_TRUE(second.ok()) << second.error();
  const int dead = dead_port();
  ASSERT_GT(dead, 0);
  const std::string dead_target = "127.0.0.1:" + std::to_string(dead);
  ASSERT_TRUE(classify_grpc(*stub_, read_binary(images_[0].png)).status.ok());

  const auto start = std::chrono::steady_clock::now();
  const ProcessOutput out = run_tessera({"fleet", daemon_->grpc_address(), second.grpc_address(), dead_target, "--once",
                                         "--json", "--timeout-ms", "2000"});
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(out.exit_status, 0) << out.err;
  const std::vector<json> lines = json_lines(out.out);
  ASSERT_EQ(lines.size(), 1u) << out.out;
  const json& f = lines[0];
  EXPECT_EQ(f["up"], 2);
  EXPECT_EQ(f["down"], 1);
  ASSERT_EQ(f["boards"].size(), 3u);
  for (const json& b : f["boards"]) {
    if (b["target"] == dead_target) {
      EXPECT_FALSE(b["up"].get<bool>());
      EXPECT_NE(b["reason"].get<std::string>().find("UNAVAILABLE"), std::string::npos) << b;
    } else {
      EXPECT_TRUE(b["up"].get<bool>()) << b;
      EXPECT_TRUE(b["ready"].get<bool>());
      EXPECT_EQ(b["device"], "emu (zcu102)");
      EXPECT_EQ(b["models"], json::array({"fashion-mnist"}));
      EXPECT_TRUE(b["power_watts"].is_number());
    }
  }
  // The first daemon answered a request: its p99 is known.
  EXPECT_TRUE(f["boards"][0]["p99_total_us"].is_number()) << f["boards"][0];
  // Concurrent, each bounded by --timeout-ms: never the sum of serial timeouts.
  EXPECT_LT(wall, 15.0);

  // The text table and a --targets file with comments.
  ScratchDir dir("fleet");
  const auto file =
      dir.write("targets.txt", "# boards\n" + daemon_->grpc_address() + "  # first\n\n" + dead_target + "\n");
  const ProcessOutput text = run_tessera({"fleet", "--targets", file.string(), "--once"});
  EXPECT_EQ(text.exit_status, 0) << text.err;
  EXPECT_NE(text.out.find("down"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("fashion-mnist"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("1 of 2 boards up"), std::string::npos) << text.out;
}

TEST_F(CliWatchFleetTest, FleetWithNoBoardUpExitsOne) {
  const ProcessOutput out =
      run_tessera({"fleet", "127.0.0.1:" + std::to_string(dead_port()), "--once", "--timeout-ms", "500"});
  EXPECT_EQ(out.exit_status, 1) << out.out << out.err;
  EXPECT_NE(out.out.find("0 of 1 boards up"), std::string::npos) << out.out;
  const ProcessOutput no_targets = run_tessera({"fleet", "--once"});
  EXPECT_EQ(no_targets.exit_status, 2);
}

TEST_F(CliWatchFleetTest, ClassifyFolderJsonAndCsv) {
  ScratchDir dir("classify-dir");
  // Names chosen so that the sorted order differs from the order of creation.
  std::filesystem::copy_file(images_[0].png, dir.path / "c.png");
  std::filesystem::copy_file(images_[1].jpg, dir.path / "a.jpg");
  std::filesystem::copy_file(images_[2].jpg, dir.path / "d.JPEG");
  dir.write("b.png", not_an_image());
  dir.write("notes.txt", "ignored");
  ScratchDir out_dir("classify-csv");
  const auto csv = out_dir.path / "out.csv";
  const std::string single = images_[3].png.string();
  const std::string top1 = classify_grpc(*stub_, read_binary(images_[0].png)).top1();
  ASSERT_FALSE(top1.empty());

  const ProcessOutput out = run_tessera({"classify", "--server", daemon_->grpc_address(), "--json", "--top-k", "2",
                                         "--csv", csv.string(), dir.path.string(), single});
  EXPECT_EQ(out.exit_status, 1) << "one image is corrupt";
  EXPECT_NE(out.err.find("b.png: INVALID_ARGUMENT"), std::string::npos) << out.err;
  EXPECT_NE(out.err.find("1 of 5 failed"), std::string::npos) << out.err;
  const std::vector<json> lines = json_lines(out.out);
  ASSERT_EQ(lines.size(), 5u) << out.out;
  const std::vector<std::string> expected = {(dir.path / "a.jpg").string(), (dir.path / "b.png").string(),
                                             (dir.path / "c.png").string(), (dir.path / "d.JPEG").string(), single};
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i]["file"], expected[i]);
    if (i == 1) {
      EXPECT_EQ(lines[i]["error"]["code"], "INVALID_ARGUMENT");
    } else {
      EXPECT_EQ(lines[i]["classes"].size(), 2u);
    }
  }
  EXPECT_EQ(lines[2]["classes"][0]["label"], top1);

  const std::string text = read_text_file(csv);
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "file,status,error,label_1,score_1,label_2,score_2,total_us,inference_us");
  std::vector<std::string> rows;
  while (std::getline(in, line)) rows.push_back(line);
  ASSERT_EQ(rows.size(), 5u) << text;
  EXPECT_EQ(rows[1].rfind(expected[1] + ",INVALID_ARGUMENT,", 0), 0u) << rows[1];
  EXPECT_EQ(rows[2].rfind(expected[2] + ",OK,," + top1 + ",", 0), 0u) << rows[2];
  EXPECT_EQ(std::count(rows[2].begin(), rows[2].end(), ','), 8) << rows[2];
  EXPECT_EQ(std::count(rows[1].begin(), rows[1].end(), ','), 8) << rows[1];

  // An empty folder is a failure of its own.
  ScratchDir empty("classify-empty");
  const ProcessOutput none = run_tessera({"classify", "--server", daemon_->grpc_address(), empty.path.string()});
  EXPECT_EQ(none.exit_status, 1);
  EXPECT_NE(none.err.find("no .jpg/.jpeg/.png files"), std::string::npos) << none.err;
}

}  // namespace
}  // namespace tessera::testing
