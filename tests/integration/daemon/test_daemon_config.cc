// tesserad's settings from a TOML --config file, flags winning over it; bad config stops the
// start with a message naming the key; --log-format json writes one JSON object per line with
// the request id carried into the request's line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tessera/v1/telemetry.grpc.pb.h"
#include "tests/integration/daemon_test.h"
#include "tests/integration/fmnist_images.h"
#include "tests/integration/subprocess.h"

namespace tessera::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class DaemonConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tessera-config-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write_config(const std::string& text) {
    fs::path file = dir_ / "tesserad.toml";
    std::ofstream(file) << text;
    return file;
  }

  // Runs tesserad with `args` expecting it to refuse to start; its stderr.
  std::string refused(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {
        TESSERAD_PATH, "--grpc-port", "0", "--http-port", "0", "--models", bundled_models_dir().string()};
    argv.insert(argv.end(), args.begin(), args.end());
    ProcessOutput out = run_process(argv, std::chrono::milliseconds(60000));
    EXPECT_NE(out.exit_status, 0) << "started with " << args.back() << ":\n" << out.err;
    EXPECT_NE(out.exit_status, -1) << "hung";
    return out.err;
  }

  fs::path dir_;
};

TEST_F(DaemonConfigTest, ConfigFileSetsAndFlagsOverride) {
  const fs::path config = write_config(
      "# a board's settings\n"
      "max-batch = 3\n"
      "max-queue-delay-us = 250000\n"
      "log-format = \"json\"\n"
      "log-level = \"warn\"\n");
  // The flag wins over the file's warn: debug lines (one per request) appear.
  TesseradProcess daemon({"--config", config.string(), "--log-level", "debug"});
  ASSERT_TRUE(daemon.ok()) << daemon.error();
  const auto images = load_fmnist_images();
  ASSERT_GE(images.size(), 5u);

  // Five concurrent calls with max-batch 3 from the file: batches of at most 3.
  std::vector<std::thread> clients;
  clients.reserve(5);
  std::atomic<int> ok{0};
  for (int i = 0; i < 5; ++i) {
    clients.emplace_back([&, i] {
      auto stub = daemon.stub();
      if (classify_grpc(*stub, read_binary(images[static_cast<size_t>(i)].png), "", 0, "cfg-" + std::to_string(i))
              .status.ok()) {
        ++ok;
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(ok.load(), 5);
  auto telemetry =
      v1::Telemetry::NewStub(grpc::CreateChannel(daemon.grpc_address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  v1::TelemetrySnapshot snapshot;
  ASSERT_TRUE(telemetry->GetTelemetry(&context, v1::GetTelemetryRequest(), &snapshot).ok());
  uint64_t images_seen = 0;
  for (const auto& b : snapshot.models(0).batch_sizes()) {
    EXPECT_LE(b.size(), 3u) << "max-batch from the config file";
    images_seen += uint64_t{b.size()} * b.batches();
  }
  EXPECT_EQ(images_seen, 5u);

  ASSERT_EQ(daemon.stop(SIGTERM), 0);
  // Every log line is a JSON object; the request ids are in their requests' lines.
  std::istringstream log(daemon.log());
  std::string line;
  int lines = 0, with_id = 0;
  bool config_named = false;
  while (std::getline(log, line)) {
    if (line.empty()) continue;
    const json j = json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << "not JSON: " << line;
    ASSERT_TRUE(j.contains("level") && j.contains("msg")) << line;
    ++lines;
    const std::string msg = j["msg"];
    if (msg.find("cfg-") != std::string::npos) ++with_id;
    if (msg.find(config.string()) != std::string::npos) config_named = true;
  }
  EXPECT_GT(lines, 3);
  EXPECT_EQ(with_id, 5) << daemon.log();
  EXPECT_TRUE(config_named) << "the log says which config file it read";
}

TEST_F(DaemonConfigTest, BadConfigNamesTheKeyAndStopsTheStart) {
  EXPECT_NE(refused({"--config", write_config("max-bacth = 4\n").string()}).find("'max-bacth'"), std::string::npos);
  EXPECT_NE(refused({"--config", write_config("max-batch = \"four\"\n").string()}).find("'max-batch'"),
            std::string::npos);
  EXPECT_NE(refused({"--config", write_config("max-batch = 100000\n").string()}).find("'max-batch'"),
            std::string::npos);
  EXPECT_NE(refused({"--config", write_config("log-format = \"xml\"\n").string()}).find("'log-format'"),
            std::string::npos);
  EXPECT_NE(refused({"--config", write_config("this is = not toml [").string()}).find("tesserad.toml"),
            std::string::npos);
  EXPECT_NE(refused({"--config", (dir_ / "missing.toml").string()}).find("missing.toml"), std::string::npos);
  // A bad flag value says which flag and what it takes.
  EXPECT_NE(refused({"--max-batch", "0"}).find("--max-batch: must be from 1 to 256, not 0"), std::string::npos);
  EXPECT_NE(refused({"--grpc-port", "70000"}).find("from 0 to 65535"), std::string::npos);
}

}  // namespace
}  // namespace tessera::testing
