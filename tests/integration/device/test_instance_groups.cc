// Instance groups (issue 16, point 1): one model on several emulator instances (--devices 0,1).
// Each batch goes to the instance with the least outstanding work, so concurrent clients use both;
// each instance has its own fault state, so one that fails takes only itself out (its failed
// batches are run again on the other one) while the daemon stays ready; every instance has its
// own rows in /v1/telemetry and its own `device` label in /metrics.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/integration/daemon_test.h"
#include "tests/integration/fmnist_images.h"
#include "tests/integration/grpc_health.h"
#include "tests/integration/kserve_client.h"
#include "tests/integration/metrics_text.h"

namespace tessera::testing {
namespace {

class InstanceGroupTest : public ::testing::Test {
 protected:
  void start(std::vector<std::string> args) {
    images_ = load_fmnist_images();
    ASSERT_FALSE(images_.empty()) << "no images in " << TESSERA_FMNIST_DIR;
    image_ = read_binary(images_[0].png);
    args.insert(args.begin(), {"--device", "emu", "--devices", "0,1"});
    daemon_ = std::make_unique<TesseradProcess>(args, models_.path());
    ASSERT_TRUE(daemon_->ok()) << daemon_->error();
    http_ = std::make_unique<HttpClient>(daemon_->http_port());
  }

  void TearDown() override {
    if (HasFailure() && daemon_) std::cerr << "---- tesserad log ----\n" << daemon_->log() << "----\n";
  }

  // `threads` clients each send `each` requests at once; returns how many were not answered OK.
  int send_concurrently(int threads, int each) {
    std::atomic<int> failed{0};
    std::vector<std::thread> clients;
    clients.reserve(static_cast<size_t>(threads));
    for (int t = 0; t < threads; ++t) {
      clients.emplace_back([&] {
        auto stub = daemon_->stub();
        for (int i = 0; i < each; ++i) {
          const GrpcAnswer answer = classify_grpc(*stub, image_);
          if (!answer.status.ok()) {
            ++failed;
            std::cerr << "request failed: " << answer.status.error_message() << "\n";
          }
        }
      });
    }
    for (auto& client : clients) client.join();
    return failed.load();
  }

  nlohmann::json telemetry_devices() {
    const HttpReply reply = http_->get("/v1/telemetry");
    EXPECT_EQ(reply.status, 200) << reply.body;
    return nlohmann::json::parse(reply.body, nullptr, false)["devices"];
  }

  ModelsCopy models_{1, 0, 256};  // batches of one: every request is one device run
  std::vector<FmnistImage> images_;
  std::string image_;
  std::unique_ptr<TesseradProcess> daemon_;
  std::unique_ptr<HttpClient> http_;
};

TEST_F(InstanceGroupTest, TwoEmulatorInstancesServeOneModelConcurrently) {
  start({});
  EXPECT_NE(daemon_->log().find("[device 0] device emu: emulator"), std::string::npos) << daemon_->log();
  EXPECT_NE(daemon_->log().find("[device 1] device emu: emulator"), std::string::npos);
  EXPECT_NE(daemon_->log().find("x 2 device instances"), std::string::npos) << daemon_->log();
  EXPECT_EQ(send_concurrently(4, 10), 0);

  const nlohmann::json devices = telemetry_devices();
  ASSERT_TRUE(devices.is_array());
  ASSERT_EQ(devices.size(), 2U) << devices.dump();
  uint64_t images = 0;
  for (size_t i = 0; i < 2; ++i) {
    const nlohmann::json& d = devices[i];
    EXPECT_EQ(d["index"], i);
    EXPECT_EQ(d["kind"], "emu");
    EXPECT_EQ(d["state"], "serving");
    EXPECT_GT(d["images"].get<uint64_t>(), 0U) << "device " << i << " was never used: " << devices.dump();
    EXPECT_GT(d["images_per_second"].get<double>(), 0) << devices.dump();
    EXPECT_GT(d["power_watts"].get<double>(), 0) << "the board's power model, per device: " << devices.dump();
    EXPECT_EQ(d["power_source"], "model");
    images += d["images"].get<uint64_t>();
  }
  EXPECT_EQ(images, 40U);

  const std::string body = http_->get("/metrics").body;
  double device_images = 0;
  for (const std::string device : {"0", "1"}) {
    const std::string label = "{device=\"" + device + "\"}";
    EXPECT_GT(sample_value(body, "tessera_device_images_total" + label).value_or(-1), 0) << body;
    device_images += sample_value(body, "tessera_device_images_total" + label).value_or(-1);
    EXPECT_EQ(sample_value(body, "tessera_device_serving" + label).value_or(-1), 1) << body;
    EXPECT_EQ(sample_value(body, "tessera_device_errors_total" + label).value_or(-1), 0) << body;
    EXPECT_GT(sample_value(body, "tessera_power_watts" + label).value_or(-1), 0) << body;
    EXPECT_GE(sample_value(body, "tessera_fabric_utilization_ratio" + label).value_or(-1), 0) << body;
    EXPECT_NE(body.find("tessera_device_info{board=\"zcu102\",device=\"" + device + "\",kind=\"emu\""),
              std::string::npos)
        << body;
  }
  EXPECT_EQ(device_images, 40);
  EXPECT_EQ(body.find("\ntessera_power_watts "), std::string::npos) << "no unlabelled device series";
}

TEST_F(InstanceGroupTest, FaultedInstanceLeavesTheOtherServing) {
  // Every run of instance 1 fails: after two failures in a row it is out of service. Its failed
  // batches run again on instance 0, so no client sees a failure.
  start({"--emu-faults", "instance=1,fail-run=1+", "--device-max-failures", "2"});
  EXPECT_EQ(send_concurrently(2, 15), 0);

  const nlohmann::json devices = telemetry_devices();
  ASSERT_EQ(devices.size(), 2U) << devices.dump();
  EXPECT_EQ(devices[0]["state"], "serving") << devices.dump();
  EXPECT_EQ(devices[1]["state"], "out of service") << devices.dump();
  EXPECT_EQ(devices[0]["images"], 30) << devices.dump();
  EXPECT_EQ(devices[1]["images"], 0) << devices.dump();
  EXPECT_EQ(devices[1]["errors"], 2) << devices.dump();

  EXPECT_EQ(grpc_health(daemon_->grpc_address()), kHealthServing) << "one device still serves: ready";
  EXPECT_EQ(http_->get("/v2/health/ready").status, 200);
  const std::string body = http_->get("/metrics").body;
  EXPECT_EQ(sample_value(body, "tessera_device_serving{device=\"0\"}").value_or(-1), 1) << body;
  EXPECT_EQ(sample_value(body, "tessera_device_serving{device=\"1\"}").value_or(-1), 0) << body;
  EXPECT_EQ(sample_value(body, "tessera_device_errors_total{device=\"1\"}").value_or(-1), 2) << body;
  EXPECT_EQ(sample_value(body, "tessera_device_errors_total{device=\"0\"}").value_or(-1), 0) << body;
  EXPECT_NE(body.find("\ntessera_ready 1"), std::string::npos) << body;
  EXPECT_NE(daemon_->log().find("device 1 out of service"), std::string::npos) << daemon_->log();

  // And it keeps serving on the one device left.
  EXPECT_EQ(send_concurrently(2, 5), 0);
}

TEST_F(InstanceGroupTest, BadDeviceListsAndInstanceCountsAreRefusedAtStart) {
  TesseradProcess twice({"--device", "emu", "--devices", "0,0"}, models_.path());
  EXPECT_FALSE(twice.ok());
  EXPECT_NE(twice.error().find("--devices names device 0 twice"), std::string::npos) << twice.error();
  TesseradProcess words({"--device", "emu", "--devices", "first"}, models_.path());
  EXPECT_FALSE(words.ok());
  EXPECT_NE(words.error().find("--devices wants \"all\" or device indices"), std::string::npos) << words.error();

  // A model asking for more instances than the daemon drives says so, naming its folder.
  const std::filesystem::path toml = models_.path() / "fashion-mnist" / "model.toml";
  std::ofstream(toml, std::ios::app) << "\n[instances]\ncount = 3\n";
  TesseradProcess three({"--device", "emu", "--devices", "0,1"}, models_.path());
  EXPECT_FALSE(three.ok());
  EXPECT_NE(three.error().find("[instances] count = 3 but the daemon has 2 device(s)"), std::string::npos)
      << three.error();
}

}  // namespace
}  // namespace tessera::testing
