// The registry's view of the xrt backend. xrt_backend.cc implements it over accel/device/xrt/
// when the build found XRT; xrt_backend_missing.cc answers in its place when it did not, so a
// build without XRT (a board image without its SDK, a laptop) still lists `xrt` and says why it
// cannot open it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "accel/common/status.h"
#include "accel/device/device.h"
#include "accel/device/device_registry.h"

namespace tessera {

// Whether this binary was built with the xrt backend.
bool xrt_backend_built();

// Devices XRT sees. UNAVAILABLE with XRT's message when XRT cannot be used; FAILED_PRECONDITION
// (kXrtNotBuilt...) on a build without XRT.
Result<unsigned> count_xrt_devices();

// Opens Xilinx device options.index with the xclbin resolve_xclbin(options) finds.
Result<std::unique_ptr<Device>> open_xrt_device(const DeviceOptions& options);

// The compute units of tessera_accel in the xclbin resolve_xclbin(options) finds (xrt_device.h).
Result<std::vector<std::string>> xrt_compute_units_of(const DeviceOptions& options);

// What a build without XRT answers to `--device xrt`: what is missing and how to build with it.
inline constexpr const char* kXrtNotBuiltMessage =
    "this binary was built without XRT (CMake found no XRT headers and libraries), so it cannot drive an "
    "FPGA; install XRT (Debian amd64: libxrt-dev; a board: the PetaLinux/Yocto xrt package or the vendor's "
    "packages in the sysroot) and rebuild, with -DXRT_ROOT=<prefix> when XRT is not in a standard place";

}  // namespace tessera
