// The xrt backend behind the registry (builds that found XRT; see xrt_backend.h).
#include "accel/device/xrt/xrt_backend.h"

#include <string>
#include <utility>

#include "accel/device/xrt/xrt_device.h"

namespace tessera {
namespace {

Result<BackendDevice> open_unit(const DeviceTarget& target, const std::filesystem::path& xclbin,
                                std::string compute_unit) {
  TESSERA_ASSIGN_OR_RETURN(
      auto device,
      XrtDevice::open(XrtOptions{
          .index = target.index, .xclbin = xclbin, .board = target.board, .compute_unit = std::move(compute_unit)}));
  const DeviceInfo info = device->info();
  return BackendDevice{std::move(device), "device xrt: " + info.name + " (" + info.detail + ")"};
}

}  // namespace

bool xrt_backend_built() { return true; }

Result<unsigned> count_xrt_devices() { return xrt_device_count(); }

Result<std::vector<BackendDevice>> open_xrt_backend(const DeviceTarget& target, const XrtBackendOptions& options) {
  const std::filesystem::path xclbin = resolve_xclbin(options);
  // The kernel as one device first: its errors name the board and the xclbin.
  TESSERA_ASSIGN_OR_RETURN(BackendDevice whole, open_unit(target, xclbin, ""));
  std::vector<BackendDevice> devices;
  const Result<std::vector<std::string>> units = xrt_compute_units(xclbin);
  if (!units.is_ok() || units->size() <= 1) {
    devices.push_back(std::move(whole));
    return devices;
  }
  whole.device.reset();
  for (const std::string& unit : *units) {
    TESSERA_ASSIGN_OR_RETURN(BackendDevice instance, open_unit(target, xclbin, unit));
    devices.push_back(std::move(instance));
  }
  return devices;
}

}  // namespace tessera
