// XrtDevice: a real board (Zynq/ZynqMP edge or an Alveo/AWS F1 card) through XRT's native C++ API.
// open() opens xrt::device(index), loads the xclbin and finds the kernel `tessera_accel`; load()
// makes a program's weights resident and allocates ping-pong buffers (xrt_program.h). Every XRT
// exception is caught inside accel/device/xrt/ and becomes a Status; this header needs no XRT
// headers (the handles live behind a pimpl).
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "accel/common/status.h"
#include "accel/device/device.h"

namespace tessera {

struct XrtHandles;

struct XrtOptions {
  unsigned index = 0;            // xrt::device index
  std::filesystem::path xclbin;  // .xclbin (edge, Alveo) or .awsxclbin (F1)
  std::string board;             // board profile reported in DeviceInfo, e.g. "aws-f1"
};

// Devices XRT sees (xrt::system::enumerate_devices()), after ensure_xilinx_xrt_env(). An XRT
// failure (shim missing, driver error) is UNAVAILABLE with XRT's message, never an exception.
Result<unsigned> xrt_device_count();

class XrtDevice : public Device {
 public:
  // UNAVAILABLE "no Xilinx device found (xrt::system::enumerate_devices() = 0)" without a board;
  // FAILED_PRECONDITION "xclbin not found: PATH", "... is not an xclbin ...", "kernel tessera_accel
  // not in xclbin PATH (kernels: ...)". The xclbin file is checked even without a board, and both
  // problems are named when both exist.
  static Result<std::unique_ptr<Device>> open(const XrtOptions& options);

  ~XrtDevice() override;
  DeviceInfo info() const override;
  Result<std::unique_ptr<DeviceProgram>> load(const CompiledProgram& program, uint32_t max_batch) override;
  // Board power, rails and temperatures from electrical_json() and thermal_json() (xrt_sensors.h).
  Result<DeviceSensors> sample_sensors() const override;

  // Raw sensor reports of the card as XRT's JSON text (xrt::info::device::electrical / thermal);
  // UNAVAILABLE where the platform has none (edge boards: use hwmon instead).
  Result<std::string> electrical_json() const;
  Result<std::string> thermal_json() const;

 private:
  XrtDevice(std::unique_ptr<XrtHandles> handles, DeviceInfo info);

  std::unique_ptr<XrtHandles> handles_;
  DeviceInfo info_;
};

}  // namespace tessera
