// Power per device instance (issue 16, point 1): each emulator instance models its own board
// (static + the dynamic energy of what it ran), so an idle instance reads static watts while a
// busy one reads more; with --hwmon-rails each instance reads its own hwmon rails (a fake sysfs
// tree of two cards here), and the daemon's power is their sum.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/integration/daemon_test.h"
#include "tests/integration/fmnist_images.h"
#include "tests/integration/kserve_client.h"

namespace tessera::testing {
namespace {

namespace fs = std::filesystem;

class DevicePowerTest : public ::testing::Test {
 protected:
  void start(std::vector<std::string> args) {
    args.insert(args.begin(), {"--device", "emu", "--devices", "0,1", "--telemetry-interval-ms", "100"});
    daemon_ = std::make_unique<TesseradProcess>(args, models_.path());
    ASSERT_TRUE(daemon_->ok()) << daemon_->error();
    http_ = std::make_unique<HttpClient>(daemon_->http_port());
  }
  void TearDown() override {
    if (HasFailure() && daemon_) std::cerr << "---- tesserad log ----\n" << daemon_->log() << "----\n";
  }
  nlohmann::json telemetry() {
    const HttpReply reply = http_->get("/v1/telemetry");
    EXPECT_EQ(reply.status, 200) << reply.body;
    return nlohmann::json::parse(reply.body, nullptr, false);
  }

  ModelsCopy models_{8, 2000, 256};
  std::unique_ptr<TesseradProcess> daemon_;
  std::unique_ptr<HttpClient> http_;
};

TEST_F(DevicePowerTest, EachEmulatorInstanceModelsItsOwnBoard) {
  // The model runs on instance 0 only; instance 1 idles beside it.
  std::ofstream(models_.path() / "fashion-mnist" / "model.toml", std::ios::app) << "\n[instances]\ndevices = [0]\n";
  start({});
  const std::string image = read_binary(load_fmnist_images().at(0).png);
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  clients.reserve(4);
  for (int t = 0; t < 4; ++t) {
    clients.emplace_back([&] {
      auto stub = daemon_->stub();
      for (int i = 0; i < 2000 && !stop; ++i) classify_grpc(*stub, image);
    });
  }
  double busy_max = 0, idle_min = 1e9, idle_max = 0;
  for (int sample = 0; sample < 30; ++sample) {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    const nlohmann::json devices = telemetry()["devices"];
    ASSERT_EQ(devices.size(), 2U) << devices.dump();
    if (devices[0]["power_watts"].is_number()) busy_max = std::max(busy_max, devices[0]["power_watts"].get<double>());
    if (!devices[1]["power_watts"].is_number()) continue;
    idle_min = std::min(idle_min, devices[1]["power_watts"].get<double>());
    idle_max = std::max(idle_max, devices[1]["power_watts"].get<double>());
  }
  stop = true;
  for (auto& client : clients) client.join();

  const nlohmann::json t = telemetry();
  EXPECT_GT(idle_min, 0) << "the idle board still draws its static power: " << t.dump();
  EXPECT_DOUBLE_EQ(idle_min, idle_max) << "nothing ran on instance 1: static watts only";
  EXPECT_GT(busy_max, idle_max) << "instance 0 adds the dynamic power of what it ran: " << t.dump();
  EXPECT_GT(t["devices"][0]["images"].get<uint64_t>(), 0U);
  EXPECT_EQ(t["devices"][1]["images"], 0U);
  EXPECT_EQ(t["devices"][1]["power_source"], "model");
}

TEST_F(DevicePowerTest, EachInstanceReadsItsOwnHwmonRails) {
  // Two cards, each with a power monitor whose hwmon links to its PCI device.
  const fs::path sys = fs::temp_directory_path() / ("tessera-sysfs-" + std::to_string(getpid()));
  fs::remove_all(sys);
  const std::pair<const char*, const char*> cards[] = {{"0000:3b:00.0", "20000000"}, {"0000:af:00.0", "35000000"}};
  for (int i = 0; i < 2; ++i) {
    const fs::path hwmon = sys / "class" / "hwmon" / ("hwmon" + std::to_string(i));
    const fs::path device = sys / "devices" / "pci0000:00" / cards[i].first;
    fs::create_directories(hwmon);
    fs::create_directories(device);
    fs::create_symlink(device, hwmon / "device");
    std::ofstream(hwmon / "name") << "ina226_card\n";
    std::ofstream(hwmon / "power1_input") << cards[i].second << "\n";
  }
  start({"--sysfs-root", sys.string(), "--hwmon-rails", "0=0000:3b:00.0,1=0000:af:00.0"});
  nlohmann::json t;
  for (int tries = 0; tries < 50; ++tries) {  // the samplers' first readings
    t = telemetry();
    if (t["devices"][0]["power_source"] == "hwmon" && t["devices"][1]["power_source"] == "hwmon") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(t["devices"][0]["power_source"], "hwmon") << t.dump();
  EXPECT_EQ(t["devices"][1]["power_source"], "hwmon") << t.dump();
  EXPECT_DOUBLE_EQ(t["devices"][0]["power_watts"].get<double>(), 20.0) << t.dump();
  EXPECT_DOUBLE_EQ(t["devices"][1]["power_watts"].get<double>(), 35.0) << t.dump();
  EXPECT_DOUBLE_EQ(t["power_watts"].get<double>(), 55.0) << "the daemon's power adds up the devices";
  daemon_.reset();

  TesseradProcess unknown({"--device", "emu", "--devices", "0,1", "--hwmon-rails", "2=0000:3b:00.0"}, models_.path());
  EXPECT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().find("--hwmon-rails names device 2, which --devices does not open"), std::string::npos)
      << unknown.error();
  fs::remove_all(sys);
}

}  // namespace
}  // namespace tessera::testing
