// The device's health and the way back after a failure (runtime/device_supervisor.h), and the
// emulator's fault spec (device/emu/emu_faults.h) that the daemon's fault tests are written in.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "accel/device/emu/emu_faults.h"
#include "accel/runtime/device_supervisor.h"

namespace tessera {
namespace {

// A device that only counts its resets (and fails them when told to).
class ResetCountingDevice : public Device {
 public:
  DeviceInfo info() const override { return {"fake", "fake", "zcu102", "", 0}; }
  Result<std::unique_ptr<DeviceProgram>> load(const CompiledProgram&, uint32_t) override {
    return Status::unimplemented("fake");
  }
  Status reset() override {
    ++resets;
    return fail_resets ? Status::unavailable("reset refused") : Status::ok();
  }
  int resets = 0;
  bool fail_resets = false;
};

TEST(EmuFaults, ParsesEveryKeyAndOnwards) {
  auto plan = emu::parse_emu_faults("fail-run=3,hang-run=2+,wedge-run=5,corrupt-run=7,fail-load=2,reset-ms=250");
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  EXPECT_TRUE(plan->fail_run.fires(3));
  EXPECT_FALSE(plan->fail_run.fires(4));
  EXPECT_FALSE(plan->hang_run.fires(1));
  EXPECT_TRUE(plan->hang_run.fires(2));
  EXPECT_TRUE(plan->hang_run.fires(100));
  EXPECT_TRUE(plan->wedge_run.fires(5));
  EXPECT_TRUE(plan->corrupt_run.fires(7));
  EXPECT_TRUE(plan->fail_load.fires(2));
  EXPECT_EQ(plan->reset_delay.count(), 250);
  EXPECT_TRUE(plan->any());
  EXPECT_FALSE(emu::parse_emu_faults("")->any());
}

TEST(EmuFaults, RefusesWhatItCannotRead) {
  for (const char* bad : {"fail-runs=1", "fail-run", "fail-run=x", "fail-run=0", "reset-ms=-1", "hang-run=1++"}) {
    auto plan = emu::parse_emu_faults(bad);
    EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(DeviceSupervisor, FailureMakesItRecoveringUntilTheProgramIsReloaded) {
  auto device = std::make_shared<ResetCountingDevice>();
  DeviceSupervisor supervisor(device, 3);
  std::vector<DeviceEvent::Kind> events;
  supervisor.set_listener([&](const DeviceEvent& e) { events.push_back(e.kind); });

  const Status answer = supervisor.failed(Status::deadline_exceeded("run did not finish"));
  EXPECT_EQ(answer.code(), StatusCode::kUnavailable);
  EXPECT_NE(answer.message().find("device failed: DEADLINE_EXCEEDED: run did not finish"), std::string::npos);
  EXPECT_EQ(supervisor.health().state, DeviceState::kRecovering);
  EXPECT_TRUE(supervisor.usable().is_ok()) << "recovering is not refusing";

  const uint64_t seen = supervisor.generation();
  ASSERT_TRUE(supervisor.reset(seen).is_ok());
  ASSERT_TRUE(supervisor.reset(seen).is_ok()) << "a second engine that saw the same failure";
  EXPECT_EQ(device->resets, 1) << "one reset per failure, however many engines saw it";
  EXPECT_EQ(supervisor.generation(), seen + 1);
  supervisor.recovered();
  EXPECT_EQ(supervisor.health().state, DeviceState::kServing);
  EXPECT_EQ(supervisor.health().errors, 1u);
  EXPECT_EQ(supervisor.health().resets, 1u);
  EXPECT_EQ(events, (std::vector{DeviceEvent::Kind::kFailed, DeviceEvent::Kind::kRecovered}));
}

TEST(DeviceSupervisor, FailuresInARowTakeItOutOfServiceAndASuccessfulRunForgivesThem) {
  DeviceSupervisor supervisor(std::make_shared<ResetCountingDevice>(), 2);
  (void)supervisor.failed(Status::internal("a"));
  supervisor.recovered();
  supervisor.run_ok();
  (void)supervisor.failed(Status::internal("b"));
  supervisor.recovered();
  EXPECT_EQ(supervisor.health().state, DeviceState::kServing) << "the successful run in between counts";
  const Status last = supervisor.failed(Status::internal("c"));
  EXPECT_NE(last.message().find("out of service"), std::string::npos);
  const DeviceHealth health = supervisor.health();
  EXPECT_EQ(health.state, DeviceState::kOutOfService);
  EXPECT_NE(health.reason.find("failed 2 times in a row"), std::string::npos) << health.reason;
  EXPECT_NE(health.reason.find("INTERNAL: c"), std::string::npos) << health.reason;
  EXPECT_EQ(supervisor.usable().code(), StatusCode::kUnavailable);
  supervisor.recovered();
  EXPECT_EQ(supervisor.health().state, DeviceState::kOutOfService) << "out of service is for good";
}

TEST(DeviceSupervisor, WedgedRunTakesItOutOfServiceAtOnce) {
  DeviceSupervisor supervisor(std::make_shared<ResetCountingDevice>(), 3);
  const Status answer = supervisor.wedged(std::chrono::milliseconds(1400));
  EXPECT_NE(answer.message().find("did not return within 1400 ms"), std::string::npos) << answer.message();
  EXPECT_EQ(supervisor.health().state, DeviceState::kOutOfService);
  EXPECT_EQ(supervisor.health().errors, 1u);
  EXPECT_EQ(supervisor.wedged(std::chrono::milliseconds(1400)).code(), StatusCode::kUnavailable);
  EXPECT_EQ(supervisor.health().errors, 1u) << "counted once";
}

TEST(DeviceSupervisor, FailedResetStillRetiresTheOldPrograms) {
  auto device = std::make_shared<ResetCountingDevice>();
  device->fail_resets = true;
  DeviceSupervisor supervisor(device);
  EXPECT_EQ(supervisor.reset(0).code(), StatusCode::kUnavailable);
  EXPECT_EQ(supervisor.generation(), 1u);
  EXPECT_EQ(supervisor.health().resets, 0u);
}

}  // namespace
}  // namespace tessera
