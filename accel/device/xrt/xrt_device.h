// XrtDevice: a real board (Zynq/ZynqMP edge or an Alveo/AWS F1 card) through XRT's native C++ API.
// open() opens xrt::device(index), loads the xclbin and finds the kernel `tessera_accel`; load()
// makes a program's weights resident and allocates ping-pong buffers (xrt_program.h). Every XRT
// exception is caught inside accel/device/xrt/ and becomes a Status; this header needs no XRT
// headers (the handles live behind a pimpl).
#pragma once

#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "accel/common/status.h"
#include "accel/device/device.h"

namespace tessera {

struct XrtHandles;

struct XrtOptions {
  unsigned index = 0;            // xrt::device index
  std::filesystem::path xclbin;  // .xclbin (edge, Alveo) or .awsxclbin (F1)
  std::string board;             // board profile reported in DeviceInfo, e.g. "aws-f1"
  // One compute unit of the xclbin's tessera_accel ("tessera_accel_2": the kernel is opened as
  // "tessera_accel:{tessera_accel_2}", so every run lands on that instance and its buffers sit in
  // its banks); empty: the kernel with all its compute units (XRT picks one per run among those
  // connected to the buffers' banks, which with per-instance banks is always the first).
  std::string compute_unit;
};

// The compute units of tessera_accel in the xclbin at `xclbin` ("tessera_accel_1", ...), read
// without a device; FAILED_PRECONDITION as XrtDevice::open for a missing or bad file.
Result<std::vector<std::string>> xrt_compute_units(const std::filesystem::path& xclbin);

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
  // After a failed run: drops this object's handles to the device, opens xrt::device(index) again,
  // loads the xclbin again and finds the kernel again. Programs loaded before keep the old handles
  // and must be destroyed and loaded again (the runtime's DeviceSupervisor does). What XRT does
  // underneath (a CU reset by the scheduler, a re-download of the xclbin or none when its uuid
  // is unchanged) depends on the shell; a hot reset of the whole card needs root (xbutil reset)
  // and is left to the operator: a device that keeps failing is taken out of service instead.
  // Untested without a board.
  Status reset() override;
  // Board power, rails and temperatures from electrical_json() and thermal_json() (xrt_sensors.h).
  Result<DeviceSensors> sample_sensors() const override;

  // Raw sensor reports of the card as XRT's JSON text (xrt::info::device::electrical / thermal);
  // UNAVAILABLE where the platform has none (edge boards: use hwmon instead).
  Result<std::string> electrical_json() const;
  Result<std::string> thermal_json() const;

 private:
  XrtDevice(std::unique_ptr<XrtHandles> handles, DeviceInfo info, XrtOptions options);

  mutable std::mutex mu_;  // handles_ is replaced by reset() while the sampler reads sensors
  std::unique_ptr<XrtHandles> handles_;
  DeviceInfo info_;
  const XrtOptions options_;
};

}  // namespace tessera
