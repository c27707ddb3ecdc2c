// tesserad --device xrt on the software-emulated XRT device (kernels/sw_emu/): the test build's
// daemon, unchanged, loads the emulated libxrt_coreutil through LD_LIBRARY_PATH (inherited from
// this test, which checks in /proc/PID/maps that the daemon mapped the emulation and FAILS otherwise) and serves the
// bundled model through the xrt backend. Faults come from TESSERA_XRT_EMU_FAULTS, set here before
// each daemon starts; they are answered as the emulator's device-fault tests require
// (tests/integration/device/test_device_faults.cc): the batch fails UNAVAILABLE / 503 "device
// failed" with the reason, the supervisor resets and reloads, health and readiness say why.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/daemon_test.h"
#include "tests/integration/fmnist_images.h"
#include "tests/integration/grpc_health.h"
#include "tests/integration/http_client.h"
#include "tests/integration/kserve_client.h"
#include "tests/xrt/xrt_emu_env.h"

namespace tessera::testing {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kServing = 1;

std::string emu_xclbin(const std::string& board) {
  const char* dir = std::getenv("TESSERA_XRT_EMU_DIR");
  return (std::filesystem::path(dir == nullptr ? "" : dir) / (board + ".xclbin")).string();
}

class XrtDaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    images_ = load_fmnist_images();
    ASSERT_FALSE(images_.empty()) << "no images in " << TESSERA_FMNIST_DIR;
    image_ = read_binary(images_[0].png);
  }
  void TearDown() override {
    if (HasFailure() && daemon_) std::cerr << "---- tesserad log ----\n" << daemon_->log() << "----\n";
    setenv("TESSERA_XRT_EMU_FAULTS", "", 1);
    setenv("TESSERA_XRT_EMU_DEVICES", "1", 1);
  }

  // tesserad --device xrt with the emulated `board` layout, `cards` cards and `faults`.
  void start(std::vector<std::string> args, const std::string& faults = "", unsigned cards = 1,
             const std::string& board = "zcu102") {
    setenv("TESSERA_XRT_EMU_FAULTS", faults.c_str(), 1);
    setenv("TESSERA_XRT_EMU_DEVICES", std::to_string(cards).c_str(), 1);
    args.insert(args.begin(),
                {"--device", "xrt", "--xclbin", emu_xclbin(board), "--board", board == "aws_f1" ? "aws-f1" : board});
    daemon_ = std::make_unique<TesseradProcess>(args, models_.path());
    ASSERT_TRUE(daemon_->ok()) << daemon_->error();
    ASSERT_EQ(process_emulated_xrt_problem(daemon_->pid()), "") << "the daemon must run on the emulated XRT device";
    stub_ = daemon_->stub();
    http_ = std::make_unique<HttpClient>(daemon_->http_port());
  }

  int health() const { return grpc_health(daemon_->grpc_address()); }

  bool wait_for_health(int want) const {
    const auto until = Clock::now() + std::chrono::seconds(10);
    while (Clock::now() < until) {
      if (health() == want) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  double device_errors() {
    const std::string body = http_->get("/metrics").body;
    const std::string name = "\ntessera_device_errors_total{device=\"0\"} ";
    const size_t at = body.find(name);
    return at == std::string::npos ? -1 : std::stod(body.substr(at + name.size()));
  }

  nlohmann::json telemetry_devices() {
    const HttpReply reply = http_->get("/v1/telemetry");
    EXPECT_EQ(reply.status, 200) << reply.body;
    return nlohmann::json::parse(reply.body, nullptr, false)["devices"];
  }

  // `threads` clients each send `each` requests at once; how many were not answered OK.
  int send_concurrently(int threads, int each) {
    std::atomic<int> failed{0};
    std::vector<std::thread> clients;
    clients.reserve(static_cast<size_t>(threads));
    for (int t = 0; t < threads; ++t) {
      clients.emplace_back([&] {
        auto stub = daemon_->stub();
        for (int i = 0; i < each; ++i) failed += classify_grpc(*stub, image_).status.ok() ? 0 : 1;
      });
    }
    for (auto& client : clients) client.join();
    return failed.load();
  }

  ModelsCopy models_{1, 0, 256};  // batches of one: request N is device run N
  std::vector<FmnistImage> images_;
  std::string image_;
  std::unique_ptr<TesseradProcess> daemon_;
  std::unique_ptr<v1::Classifier::Stub> stub_;
  std::unique_ptr<HttpClient> http_;
};

// Every test image through the xrt backend gets the emulator's top-1 (and the same scores).
TEST_F(XrtDaemonTest, ClassifiesTheTestImagesAtTheEmulatorsTop1) {
  std::vector<GrpcAnswer> emulator;
  {
    TesseradProcess emu({"--device", "emu"}, models_.path());
    ASSERT_TRUE(emu.ok()) << emu.error();
    auto stub = emu.stub();
    for (const FmnistImage& image : images_) emulator.push_back(classify_grpc(*stub, read_binary(image.png)));
  }
  ASSERT_NO_FATAL_FAILURE(start({}));
  // The load log line: the device, the xclbin's uuid, compute units and banks.
  const std::string log = daemon_->log();
  EXPECT_NE(log.find("device xrt: xilinx_zcu102_base"), std::string::npos) << log;
  EXPECT_NE(log.find("xclbin uuid "), std::string::npos) << log;
  EXPECT_NE(log.find("tessera_accel_1 [program:HP0 weights:HP1 quant:HP0 arena:HP2 status:HP0]"), std::string::npos)
      << log;
  int correct = 0;
  for (size_t i = 0; i < images_.size(); ++i) {
    const GrpcAnswer answer = classify_grpc(*stub_, read_binary(images_[i].png));
    ASSERT_TRUE(answer.status.ok()) << answer.status.error_message();
    ASSERT_TRUE(emulator[i].status.ok()) << emulator[i].status.error_message();
    EXPECT_EQ(answer.top1(), emulator[i].top1()) << images_[i].stem;
    ASSERT_EQ(answer.response.classes_size(), emulator[i].response.classes_size());
    for (int k = 0; k < answer.response.classes_size(); ++k) {
      EXPECT_EQ(answer.response.classes(k).score(), emulator[i].response.classes(k).score()) << images_[i].stem;
    }
    correct += answer.top1() == images_[i].label_name ? 1 : 0;
  }
  EXPECT_GT(correct, static_cast<int>(images_.size()) / 2) << "the bundled model is mostly right";
  EXPECT_EQ(telemetry_devices()[0]["kind"], "xrt") << telemetry_devices().dump();
}

// aws-f1: three instances of the kernel, each on its own DDR bank, serve one model side by side.
TEST_F(XrtDaemonTest, AwsF1ThreeInstancesServeOneModelSideBySide) {
  ASSERT_NO_FATAL_FAILURE(start({}, "", 1, "aws_f1"));
  EXPECT_NE(daemon_->log().find("x 3 device instances"), std::string::npos) << daemon_->log();
  EXPECT_EQ(send_concurrently(6, 10), 0);
  const nlohmann::json devices = telemetry_devices();
  ASSERT_EQ(devices.size(), 3U) << devices.dump();
  for (size_t i = 0; i < devices.size(); ++i) {
    EXPECT_EQ(devices[i]["kind"], "xrt") << devices.dump();
    EXPECT_GT(devices[i]["images"].get<uint64_t>(), 0U) << "instance " << i << " was never used: " << devices.dump();
  }
}

TEST_F(XrtDaemonTest, DevicesAllServesOnTwoEmulatedCards) {
  ASSERT_NO_FATAL_FAILURE(start({"--devices", "all"}, "", 2));
  EXPECT_NE(daemon_->log().find("x 2 device instances"), std::string::npos) << daemon_->log();
  EXPECT_EQ(send_concurrently(4, 10), 0);
  const nlohmann::json devices = telemetry_devices();
  ASSERT_EQ(devices.size(), 2U) << devices.dump();
  for (size_t i = 0; i < devices.size(); ++i) {
    EXPECT_GT(devices[i]["images"].get<uint64_t>(), 0U) << "card " << i << " was never used: " << devices.dump();
  }
}

// --- XRT-level faults ---

TEST_F(XrtDaemonTest, RunEndingInAnErrorStateIsUnavailableThenTheDeviceIsReloaded) {
  ASSERT_NO_FATAL_FAILURE(start({}, "error-run=2"));
  ASSERT_TRUE(classify_grpc(*stub_, image_).status.ok());
  const GrpcAnswer failed = classify_grpc(*stub_, image_);
  EXPECT_EQ(failed.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(failed.status.error_message().find("device failed"), std::string::npos) << failed.status.error_message();
  EXPECT_NE(failed.status.error_message().find("fabric run ended in ERT_CMD_STATE_ERROR"), std::string::npos)
      << failed.status.error_message();
  ASSERT_TRUE(wait_for_health(kServing)) << "the device did not recover";
  EXPECT_TRUE(classify_grpc(*stub_, image_).status.ok());
  EXPECT_EQ(device_errors(), 1);
  EXPECT_NE(daemon_->log().find("device error #1: INTERNAL: fabric run ended in ERT_CMD_STATE_ERROR"),
            std::string::npos)
      << daemon_->log();
  EXPECT_NE(daemon_->log().find("device recovered"), std::string::npos) << daemon_->log();
}

TEST_F(XrtDaemonTest, RunThatNeverCompletesIsAbortedAtItsTimeoutAndAnswered503) {
  ASSERT_NO_FATAL_FAILURE(start({"--device-timeout-ms", "300"}, "hang-run=1"));
  const auto sent = Clock::now();
  const HttpReply hung = http_->post("/v1/classify", image_, "image/png");
  EXPECT_EQ(hung.status, 503) << hung.error << hung.body;
  EXPECT_NE(hung.body.find("device failed"), std::string::npos) << hung.body;
  EXPECT_NE(hung.body.find("did not finish within 300 ms (aborted: ERT_CMD_STATE_ABORT)"), std::string::npos)
      << hung.body;
  EXPECT_LT(Clock::now() - sent, std::chrono::seconds(5));
  ASSERT_TRUE(wait_for_health(kServing));
  EXPECT_EQ(http_->post("/v1/classify", image_, "image/png").status, 200);
  EXPECT_EQ(device_errors(), 1);
}

TEST_F(XrtDaemonTest, BufferAllocationFailingAtTheReloadIsRetried) {
  // A load allocates 8 buffers (weights, quant, and program, arena, status x 2 sets): allocation 9
  // is the first of the reload after run 1 failed.
  ASSERT_NO_FATAL_FAILURE(start({}, "error-run=1,fail-alloc=9"));
  const GrpcAnswer failed = classify_grpc(*stub_, image_);
  EXPECT_EQ(failed.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  ASSERT_TRUE(wait_for_health(kServing));
  EXPECT_TRUE(classify_grpc(*stub_, image_).status.ok());
  EXPECT_EQ(device_errors(), 2);
  EXPECT_NE(daemon_->log().find("XRT: allocating buffers"), std::string::npos) << daemon_->log();
  EXPECT_NE(daemon_->log().find("fail-alloc"), std::string::npos) << daemon_->log();
}

TEST_F(XrtDaemonTest, DeviceThatDisappearsIsTakenOutOfServiceAndHealthSaysWhy) {
  ASSERT_NO_FATAL_FAILURE(start({"--device-max-failures", "3"}, "vanish-after-run=1"));
  ASSERT_TRUE(classify_grpc(*stub_, image_).status.ok());
  const HttpReply lost = http_->post("/v1/classify", image_, "image/png");
  EXPECT_EQ(lost.status, 503) << lost.body;
  EXPECT_NE(lost.body.find("device failed"), std::string::npos) << lost.body;
  // Every reset fails to open the card again: out of service, and readiness says why.
  const auto until = Clock::now() + std::chrono::seconds(15);
  HttpReply ready;
  while (Clock::now() < until) {
    ready = http_->get("/v2/health/ready");
    if (ready.body.find("device out of service") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(ready.status, 400) << ready.body;
  EXPECT_NE(ready.body.find("device out of service"), std::string::npos) << ready.body;
  EXPECT_NE(health(), kServing);
  EXPECT_NE(daemon_->log().find("cannot open Xilinx device 0"), std::string::npos) << daemon_->log();
  const HttpReply refused = http_->post("/v1/classify", image_, "image/png");
  EXPECT_EQ(refused.status, 503) << refused.body;
  EXPECT_NE(refused.body.find("device out of service"), std::string::npos) << refused.body;
}

}  // namespace
}  // namespace tessera::testing
