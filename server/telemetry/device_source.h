// DeviceSource: the device's own sensors (Device::sample_sensors()) as a PowerSource, e.g. XRT's
// electrical and thermal reports on Alveo/F1-class cards. Named after the device kind ("xrt").
#pragma once

#include <memory>
#include <string>

#include "accel/device/device.h"
#include "server/telemetry/power_source.h"

namespace tessera::telemetry {

class DeviceSource : public PowerSource {
 public:
  explicit DeviceSource(std::shared_ptr<const Device> device);

  std::string name() const override { return name_; }
  // The device's answer, UNIMPLEMENTED where it has no sensors (the emulator).
  Result<PowerReading> read() override;

 private:
  std::shared_ptr<const Device> device_;
  std::string name_;
};

}  // namespace tessera::telemetry
