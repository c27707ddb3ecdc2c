#include "server/telemetry/device_source.h"

#include <exception>
#include <utility>

namespace tessera::telemetry {

DeviceSource::DeviceSource(std::shared_ptr<const Device> device)
    : device_(std::move(device)), name_(device_ ? device_->info().kind : "device") {}

Result<PowerReading> DeviceSource::read() {
  if (!device_) return unsupported_source("no device");
  Result<DeviceSensors> sensors = device_->sample_sensors();
  if (!sensors.is_ok()) return sensors.status();
  PowerReading reading;
  reading.watts = sensors->power_watts;
  reading.temperature_c = sensors->temperature_c;
  reading.rails_watts = std::move(sensors->rails_watts);
  reading.temperatures_c = std::move(sensors->temperatures_c);
  reading.notes = std::move(sensors->notes);
  return reading;
}

}  // namespace tessera::telemetry
