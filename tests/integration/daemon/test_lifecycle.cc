// Starting and stopping tesserad: signals end it cleanly, broken model folders stop it at startup.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <random>
#include <thread>

#include "tests/integration/daemon_test.h"
#include "tests/integration/fmnist_images.h"

namespace tessera::testing {
namespace {

namespace fs = std::filesystem;

// A scratch directory removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() /
           ("tessera-models-" + std::to_string(getpid()) + "-" + std::to_string(std::random_device{}()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

TEST(Lifecycle, SigtermStopsCleanlyAfterServing) {
  TesseradProcess daemon({"--log-level", "debug"});
  ASSERT_TRUE(daemon.ok()) << daemon.error();
  const auto images = load_fmnist_images();
  ASSERT_FALSE(images.empty());
  auto stub = daemon.stub();
  ASSERT_TRUE(classify_grpc(*stub, read_binary(images[0].png)).status.ok());
  HttpClient http(daemon.http_port());
  ASSERT_EQ(http.get("/healthz").status, 200);
  const auto status = daemon.stop(SIGTERM);
  ASSERT_TRUE(status.has_value()) << "tesserad did not exit within 20 s of SIGTERM";
  EXPECT_EQ(*status, 0) << daemon.log();
}

TEST(Lifecycle, SigintStopsCleanly) {
  TesseradProcess daemon;
  ASSERT_TRUE(daemon.ok()) << daemon.error();
  const auto status = daemon.stop(SIGINT);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(*status, 0) << daemon.log();
}

TEST(Lifecycle, SigtermWhileBusyFinishesEveryCall) {
  TesseradProcess daemon;
  ASSERT_TRUE(daemon.ok()) << daemon.error();
  const auto images = load_fmnist_images();
  ASSERT_FALSE(images.empty());
  const std::string image = read_binary(images[0].png);
  std::atomic<bool> done{false};
  std::atomic<int> ok{0};
  std::atomic<int> unexpected{0};
  std::vector<std::thread> clients;
  clients.reserve(6);
  for (int t = 0; t < 6; ++t) {
    clients.emplace_back([&] {
      auto stub = daemon.stub();
      while (!done) {
        const GrpcAnswer a = classify_grpc(*stub, image);
        if (a.status.ok()) {
          ++ok;
          continue;
        }
        // During shutdown a call may be refused or cut, but never hang or fail otherwise.
        const auto code = a.status.error_code();
        if (code != grpc::StatusCode::UNAVAILABLE && code != grpc::StatusCode::CANCELLED) ++unexpected;
        break;
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto status = daemon.stop(SIGTERM);
  done = true;
  for (auto& c : clients) c.join();
  ASSERT_TRUE(status.has_value()) << "tesserad did not exit within 20 s of SIGTERM";
  EXPECT_EQ(*status, 0) << daemon.log();
  EXPECT_GT(ok.load(), 0);
  EXPECT_EQ(unexpected.load(), 0);
}

TEST(Lifecycle, BrokenModelFolderIsAStartupErrorNamingIt) {
  TempDir models;
  fs::create_directories(models.path / "broken-model");
  std::ofstream(models.path / "broken-model" / "model.toml") << "name = \"broken\"\nfile = \"missing.onnx\"\n[input\n";
  TesseradProcess daemon({}, models.path);
  EXPECT_FALSE(daemon.ok());
  EXPECT_NE(daemon.error().find("broken-model"), std::string::npos) << daemon.error();
  EXPECT_NE(daemon.error().find("exited with status 1"), std::string::npos) << daemon.error();
}

TEST(Lifecycle, EmptyModelRepositoryIsAStartupError) {
  TempDir models;
  TesseradProcess daemon({}, models.path);
  EXPECT_FALSE(daemon.ok());
  EXPECT_NE(daemon.error().find("no models"), std::string::npos) << daemon.error();
}

}  // namespace
}  // namespace tessera::testing
