// The xrt backend behind the registry (builds that found XRT; see xrt_backend.h).
#include "accel/device/xrt_backend.h"

#include "accel/device/xrt/xrt_device.h"

namespace tessera {

bool xrt_backend_built() { return true; }

Result<unsigned> count_xrt_devices() { return xrt_device_count(); }

Result<std::unique_ptr<Device>> open_xrt_device(const DeviceOptions& options) {
  return XrtDevice::open(XrtOptions{.index = options.index,
                                    .xclbin = resolve_xclbin(options),
                                    .board = options.board,
                                    .compute_unit = options.xrt_compute_unit});
}

Result<std::vector<std::string>> xrt_compute_units_of(const DeviceOptions& options) {
  return xrt_compute_units(resolve_xclbin(options));
}

}  // namespace tessera
