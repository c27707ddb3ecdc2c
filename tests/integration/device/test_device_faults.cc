// Device faults that heal (issue 15, point 3): tesserad on the emulator with injected faults
// (--emu-faults, accel/device/emu/emu_faults.h), checked over gRPC and HTTP as a client and a
// load balancer see it. What a board must do too: a failed, hung or corrupt run answers its batch
// UNAVAILABLE / 503 "device failed" (never a hang, never a wrong answer), the device is reset and
// the program reloaded while health says NOT_SERVING, tessera_device_errors_total and a log line
// record it, later requests are served; a device that keeps failing, or whose run never comes
// back, is out of service.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tests/integration/daemon_test.h"
#include "tests/integration/fmnist_images.h"
#include "tests/integration/grpc_health.h"
#include "tests/integration/kserve_client.h"

namespace tessera::testing {
namespace {

using Clock = std::chrono::steady_clock;

// One daemon per test on a one-model repository with batches of one, so request N is device run N.
class DeviceFaultTest : public ::testing::Test {
 protected:
  void start(std::vector<std::string> args) {
    images_ = load_fmnist_images();
    ASSERT_FALSE(images_.empty()) << "no images in " << TESSERA_FMNIST_DIR;
    image_ = read_binary(images_[0].png);
    args.insert(args.begin(), {"--device", "emu"});
    daemon_ = std::make_unique<TesseradProcess>(args, models_.path());
    ASSERT_TRUE(daemon_->ok()) << daemon_->error();
    stub_ = daemon_->stub();
    http_ = std::make_unique<HttpClient>(daemon_->http_port());
  }

  void TearDown() override {
    if (HasFailure() && daemon_) std::cerr << "---- tesserad log ----\n" << daemon_->log() << "----\n";
  }

  int health() const { return grpc_health(daemon_->grpc_address()); }
  HttpReply ready() { return http_->get("/v2/health/ready"); }

  // Waits (at most 10 s) until gRPC health says `want`.
  bool wait_for_health(int want) const {
    const auto until = Clock::now() + std::chrono::seconds(10);
    while (Clock::now() < until) {
      if (health() == want) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  // The value of tessera_device_errors_total in /metrics (-1 when absent).
  double device_errors() {
    const std::string body = http_->get("/metrics").body;
    const std::string name = "\ntessera_device_errors_total{device=\"0\"} ";
    const size_t at = body.find(name);
    return at == std::string::npos ? -1 : std::stod(body.substr(at + name.size()));
  }

  // A clean answer: OK and the image's class as the first request of the test gave it.
  void expect_served(const std::string& why) {
    const GrpcAnswer answer = classify_grpc(*stub_, image_);
    ASSERT_TRUE(answer.status.ok()) << why << ": " << answer.status.error_message();
    if (first_top1_.empty()) first_top1_ = answer.top1();
    EXPECT_EQ(answer.top1(), first_top1_) << why;
  }

  // A request refused at once because the device is out of service.
  static void expect_out_of_service(const HttpReply& reply) {
    EXPECT_EQ(reply.status, 503) << reply.body;
    EXPECT_NE(reply.body.find("device out of service"), std::string::npos) << reply.body;
  }

  ModelsCopy models_{1, 0, 64};
  std::vector<FmnistImage> images_;
  std::string image_;
  std::string first_top1_;
  std::unique_ptr<TesseradProcess> daemon_;
  std::unique_ptr<v1::Classifier::Stub> stub_;
  std::unique_ptr<HttpClient> http_;
};

TEST_F(DeviceFaultTest, FailedRunIsUnavailableWhileTheDeviceIsResetThenServed) {
  start({"--emu-faults", "fail-run=2,reset-ms=1500"});
  expect_served("run 1");
  EXPECT_EQ(health(), kHealthServing);

  const GrpcAnswer failed = classify_grpc(*stub_, image_);
  EXPECT_EQ(failed.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(failed.status.error_message().find("device failed"), std::string::npos) << failed.status.error_message();
  EXPECT_TRUE(failed.response.classes().empty());

  // Recovering: not ready on gRPC health and on KServe's readiness, with the reason.
  EXPECT_EQ(health(), kHealthNotServing);
  const HttpReply not_ready = ready();
  EXPECT_EQ(not_ready.status, 400) << not_ready.body;
  EXPECT_NE(not_ready.body.find("device recovering"), std::string::npos) << not_ready.body;
  EXPECT_NE(http_->get("/metrics").body.find("\ntessera_ready 0"), std::string::npos);

  ASSERT_TRUE(wait_for_health(kHealthServing)) << "the device did not recover";
  EXPECT_EQ(ready().status, 200);
  expect_served("after the reset");
  EXPECT_EQ(device_errors(), 1);
  EXPECT_NE(daemon_->log().find("device error #1: INTERNAL: emulator: run 2 ended in ERT_CMD_STATE_ERROR"),
            std::string::npos);
  EXPECT_NE(daemon_->log().find("device recovered"), std::string::npos);
}

TEST_F(DeviceFaultTest, HungRunIsAbortedAtItsTimeoutAndAnswered503) {
  start({"--emu-faults", "hang-run=1", "--device-timeout-ms", "300"});
  const auto sent = Clock::now();
  const HttpReply hung = http_->post("/v1/classify", image_, "image/png");
  const auto took = Clock::now() - sent;
  EXPECT_EQ(hung.status, 503) << hung.error << hung.body;
  EXPECT_EQ(hung.header("retry-after"), "1");
  EXPECT_NE(hung.body.find("device failed"), std::string::npos) << hung.body;
  EXPECT_NE(hung.body.find("did not finish within 300 ms"), std::string::npos) << hung.body;
  EXPECT_GE(took, std::chrono::milliseconds(300));
  EXPECT_LT(took, std::chrono::seconds(5));
  ASSERT_TRUE(wait_for_health(kHealthServing));
  const HttpReply served = http_->post("/v1/classify", image_, "image/png");
  EXPECT_EQ(served.status, 200) << served.body;
  EXPECT_EQ(device_errors(), 1);
}

// A run that does not come back at all (a board whose wait(timeout) is not honoured): the caller
// is answered after the engine's watchdog (4 x 100 ms + 1 s here), the device is out of service.
TEST_F(DeviceFaultTest, WedgedRunIsAnsweredByTheWatchdogAndTakesTheDeviceOutOfService) {
  start({"--emu-faults", "wedge-run=1", "--device-timeout-ms", "100"});
  const auto sent = Clock::now();
  const GrpcAnswer wedged = classify_grpc(*stub_, image_);
  EXPECT_LT(Clock::now() - sent, std::chrono::seconds(5));
  EXPECT_EQ(wedged.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(wedged.status.error_message().find("wedged"), std::string::npos) << wedged.status.error_message();
  EXPECT_EQ(health(), kHealthNotServing);
  const HttpReply refused = http_->post("/v1/classify", image_, "image/png");
  expect_out_of_service(refused);
  EXPECT_EQ(device_errors(), 1);
}

TEST_F(DeviceFaultTest, CorruptStatusIsNeverAnAnswer) {
  start({"--emu-faults", "corrupt-run=2"});
  auto kserve = kserve_stub(*daemon_);
  const KserveAnswer clean = kserve_infer(*kserve, bytes_request(image_));
  ASSERT_TRUE(clean.status.ok()) << clean.status.error_message();
  const KserveAnswer corrupt = kserve_infer(*kserve, bytes_request(image_));
  EXPECT_EQ(corrupt.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(corrupt.status.error_message().find("corrupt status word"), std::string::npos);
  EXPECT_EQ(corrupt.response.outputs_size(), 0);
  ASSERT_TRUE(wait_for_health(kHealthServing));
  const KserveAnswer again = kserve_infer(*kserve, bytes_request(image_));
  ASSERT_TRUE(again.status.ok()) << again.status.error_message();
  EXPECT_EQ(output_floats(again.response), output_floats(clean.response)) << "the reloaded program answers alike";
}

TEST_F(DeviceFaultTest, ReloadThatFailsIsRetried) {
  // Run 1 fails; the device dies loading the program again (load 2); the next reload works.
  start({"--emu-faults", "fail-run=1,fail-load=2"});
  const GrpcAnswer failed = classify_grpc(*stub_, image_);
  EXPECT_EQ(failed.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  ASSERT_TRUE(wait_for_health(kHealthServing));
  expect_served("after two resets");
  EXPECT_EQ(device_errors(), 2);
  EXPECT_NE(daemon_->log().find("died while loading program 2"), std::string::npos);
}

TEST_F(DeviceFaultTest, DeviceThatKeepsFailingIsTakenOutOfService) {
  start({"--emu-faults", "fail-run=1+", "--device-max-failures", "3"});
  for (int run = 1; run <= 3; ++run) {
    const HttpReply failed = http_->post("/v1/classify", image_, "image/png");
    EXPECT_EQ(failed.status, 503) << failed.body;
    EXPECT_NE(failed.body.find("device failed"), std::string::npos) << failed.body;
  }
  EXPECT_EQ(health(), kHealthNotServing);
  const HttpReply not_ready = ready();
  EXPECT_EQ(not_ready.status, 400);
  EXPECT_NE(not_ready.body.find("device out of service: the device failed 3 times in a row"), std::string::npos)
      << not_ready.body;
  // From now on refused at once, on every door.
  const GrpcAnswer refused = classify_grpc(*stub_, image_);
  EXPECT_EQ(refused.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(refused.status.error_message().find("device out of service"), std::string::npos);
  expect_out_of_service(http_->post("/v1/classify", image_, "image/png"));
  EXPECT_EQ(device_errors(), 3);
  EXPECT_NE(daemon_->log().find("device out of service"), std::string::npos);
  EXPECT_EQ(health(), kHealthNotServing) << "stays out of service";
}

TEST_F(DeviceFaultTest, DeviceThatDiesAtTheFirstLoadStopsTheStart) {
  TesseradProcess died({"--device", "emu", "--emu-faults", "fail-load=1"}, models_.path());
  EXPECT_FALSE(died.ok());
  EXPECT_NE(died.error().find("died while loading program 1"), std::string::npos) << died.error();
  TesseradProcess typo({"--device", "emu", "--emu-faults", "fail-runs=1"}, models_.path());
  EXPECT_FALSE(typo.ok());
  EXPECT_NE(typo.error().find("unknown key 'fail-runs'"), std::string::npos) << typo.error();
}

}  // namespace
}  // namespace tessera::testing
