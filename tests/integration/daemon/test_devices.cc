// The daemon's device choice on a machine without a board: --device xrt is a clear error at
// start; --device auto (the default) falls back to the emulator and says so; the int8 answers
// carry the fabric/host timing breakdown; --precision fp32 serves from the host path.
#include <gtest/gtest.h>

#include <grpcpp/grpcpp.h>

#include <fstream>

#include "tests/integration/fmnist_images.h"
#include "tests/integration/tesserad_process.h"

namespace tessera::testing {
namespace {

bool has_xilinx_device() {
  // Without a board, /dev/xclmgmt* and the render nodes XRT uses are absent.
  for (const char* path : {"/dev/xclmgmt0", "/dev/dri/renderD128"}) {
    if (std::ifstream(path).good()) return true;
  }
  return false;
}

TEST(Devices, XrtWithoutABoardFailsAtStartWithAClearMessage) {
  if (has_xilinx_device()) GTEST_SKIP() << "this machine has a Xilinx device node; the no-board path cannot be shown";
  TesseradProcess daemon({"--device", "xrt"});
  EXPECT_FALSE(daemon.ok());
  EXPECT_NE(daemon.error().find("--device xrt"), std::string::npos) << daemon.error();
  const char* answer = TESSERA_BUILT_WITH_XRT ? "no Xilinx device found" : "this binary was built without XRT";
  EXPECT_NE(daemon.error().find(answer), std::string::npos) << daemon.error();
  EXPECT_NE(daemon.error().find("exited with status 1"), std::string::npos) << daemon.error();
}

TEST(Devices, AutoFallsBackToTheEmulatorAndSaysSo) {
  if (has_xilinx_device()) GTEST_SKIP() << "this machine has a Xilinx device node";
  TesseradProcess daemon;
  ASSERT_TRUE(daemon.ok()) << daemon.error();
  const std::string log = daemon.log();
  const char* fallback = TESSERA_BUILT_WITH_XRT ? "device auto: no Xilinx device found, using the emulator"
                                                : "device auto: built without XRT, using the emulator";
  EXPECT_NE(log.find(fallback), std::string::npos) << log;
  EXPECT_NE(log.find("int8: 3 fabric layers"), std::string::npos) << log;

  auto stub = daemon.stub();
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::ListModelsRequest req;
  v1::ListModelsResponse resp;
  ASSERT_TRUE(stub->ListModels(&ctx, req, &resp).ok());
  ASSERT_EQ(resp.models_size(), 1);
  EXPECT_EQ(resp.models(0).precision(), "int8");
  EXPECT_EQ(resp.models(0).device(), "emu");
}

// Classifies one Fashion-MNIST image and returns the response.
v1::ClassifyResponse classify_one(const TesseradProcess& daemon) {
  const auto images = load_fmnist_images();
  EXPECT_FALSE(images.empty());
  v1::ClassifyRequest req;
  req.set_image(read_binary(images.front().png));
  v1::ClassifyResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  const grpc::Status status = daemon.stub()->Classify(&ctx, req, &resp);
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(resp.classes(0).index(), static_cast<uint32_t>(images.front().label));
  return resp;
}

TEST(Devices, Int8AnswersCarryTheFabricHostBreakdown) {
  TesseradProcess daemon({"--device", "emu"});
  ASSERT_TRUE(daemon.ok()) << daemon.error();
  const v1::ClassifyResponse resp = classify_one(daemon);
  EXPECT_GT(resp.timing().fabric_us(), 0u);
  EXPECT_GT(resp.timing().host_us(), 0u);
  EXPECT_GT(resp.timing().modeled_fabric_us(), 0u);
  EXPECT_LE(resp.timing().fabric_us() + resp.timing().host_us(), resp.timing().inference_us());
}

TEST(Devices, Fp32ServesFromTheHostPath) {
  TesseradProcess daemon({"--precision", "fp32"});
  ASSERT_TRUE(daemon.ok()) << daemon.error();
  const v1::ClassifyResponse resp = classify_one(daemon);
  EXPECT_EQ(resp.timing().fabric_us(), 0u);
  EXPECT_GT(resp.timing().host_us(), 0u);
}

}  // namespace
}  // namespace tessera::testing
