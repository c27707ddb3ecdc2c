// The emulated XRT device (kernels/sw_emu/) at the level of XRT's API: what makes the backend's
// tests through it meaningful. A buffer's host and device copies are apart until sync() (so a
// missing or misplaced sync in the backend changes its results), and syncs out of range throw.
#include <gtest/gtest.h>
#include <xrt/xrt_bo.h>
#include <xrt/xrt_device.h>
#include <xrt/xrt_kernel.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "accel/device/xrt/xrt_env.h"
#include "tests/xrt/xrt_emu_env.h"

namespace tessera::testing {
namespace {

TEST(EmulatedXrtApi, BuffersKeepHostAndDeviceCopiesApartUntilSync) {
  ASSERT_EQ(emulated_xrt_problem(), "");
  ASSERT_TRUE(ensure_xilinx_xrt_env().is_ok());
  reset_emulated_xrt();
  xrt::device device(0);
  const std::string path = (std::filesystem::path(std::getenv("TESSERA_XRT_EMU_DIR")) / "zcu102.xclbin").string();
  const xrt::uuid uuid = device.load_xclbin(xrt::xclbin(path));
  xrt::kernel kernel(device, uuid, "tessera_accel");
  xrt::bo bo(device, 256, kernel.group_id(3));
  const std::vector<char> data(256, 7);
  std::vector<char> seen(256, 0);
  bo.write(data.data(), data.size(), 0);
  bo.sync(XCL_BO_SYNC_BO_FROM_DEVICE, 64, 64);  // device bytes 64..127 never written: not 7
  bo.read(seen.data(), seen.size(), 0);
  EXPECT_EQ(seen[0], 7);
  EXPECT_NE(seen[64], 7) << "a sync from the device brought the host's bytes";
  bo.write(data.data(), data.size(), 0);
  bo.sync(XCL_BO_SYNC_BO_TO_DEVICE, 128, 0);
  bo.write(std::vector<char>(256, 1).data(), 256, 0);
  bo.sync(XCL_BO_SYNC_BO_FROM_DEVICE, 256, 0);
  bo.read(seen.data(), seen.size(), 0);
  EXPECT_EQ(seen[0], 7);
  EXPECT_EQ(seen[127], 7);
  EXPECT_NE(seen[128], 7) << "only the synced range reached the device";
  EXPECT_NE(seen[128], 1);
  EXPECT_THROW(bo.sync(XCL_BO_SYNC_BO_TO_DEVICE, 200, 100), std::exception);
  EXPECT_THROW(bo.write(data.data(), 16, 250), std::exception);
}

// A buffer in a bank the compute unit does not reach is not used in place: as XRT does, set_arg
// warns and binds a copy in the connected bank (later writes to the original never reach the run).
TEST(EmulatedXrtApi, ABufferInAnotherBankIsNotTheOneTheComputeUnitUses) {
  ASSERT_EQ(emulated_xrt_problem(), "");
  ASSERT_TRUE(ensure_xilinx_xrt_env().is_ok());
  reset_emulated_xrt();
  xrt::device device(0);
  const std::string path = (std::filesystem::path(std::getenv("TESSERA_XRT_EMU_DIR")) / "aws_f1.xclbin").string();
  const xrt::uuid uuid = device.load_xclbin(xrt::xclbin(path));
  xrt::kernel second(device, uuid, "tessera_accel:{tessera_accel_2}");
  xrt::kernel first(device, uuid, "tessera_accel:{tessera_accel_1}");
  EXPECT_EQ(first.group_id(0), 0);
  EXPECT_EQ(second.group_id(0), 1) << "tessera_accel_2's arguments are on DDR[1]";
  EXPECT_THROW(xrt::kernel(device, uuid, "tessera_accel:{tessera_accel_9}"), std::exception);
  ::testing::internal::CaptureStderr();
  xrt::run run(second);
  run.set_arg(0, xrt::bo(device, 64, first.group_id(0)));
  const std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(warning.find("has no compute units with connectivity required for global argument at index 0"),
            std::string::npos)
      << warning;
}

}  // namespace
}  // namespace tessera::testing
