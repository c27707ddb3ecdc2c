// The xrt backend's face to the registry (device_registry.h): its options and its factory.
// xrt_backend.cc implements it over the rest of this folder when the build found XRT;
// xrt_backend_missing.cc answers in its place when it did not, so a build without XRT (a board
// image without its SDK, a laptop) still lists `xrt` and says why it cannot open it. Both are
// built into the registry's library (the `*_backend*` files of a backend folder).
#pragma once

#include <filesystem>
#include <vector>

#include "accel/common/status.h"
#include "accel/device/device_backend.h"

namespace tessera {

struct XrtBackendOptions {
  std::filesystem::path xclbin;  // empty = $TESSERA_XCLBIN, then kDefaultXclbinPaths
};

// Where the xclbin is looked for when XrtBackendOptions::xclbin is empty, after $TESSERA_XCLBIN.
inline constexpr const char* kDefaultXclbinPaths[] = {"/opt/tessera/tessera_accel.xclbin",
                                                      "/opt/tessera/tessera_accel.awsxclbin"};

// The xclbin an xrt device would load: options.xclbin, else $TESSERA_XCLBIN, else the first of
// kDefaultXclbinPaths that exists; empty when none is given or found.
std::filesystem::path resolve_xclbin(const XrtBackendOptions& options);

// Whether this binary was built with the xrt backend.
bool xrt_backend_built();

// Devices XRT sees. UNAVAILABLE with XRT's message when XRT cannot be used; FAILED_PRECONDITION
// (kXrtNotBuiltMessage) on a build without XRT.
Result<unsigned> count_xrt_devices();

// Xilinx device target.index with the xclbin resolve_xclbin(options) finds: one device per
// compute unit of the xclbin's kernel (aws-f1: three, each on its own DDR bank, so an instance
// group runs batches on all of them side by side), else the kernel as one device. Each note is
// "device xrt: NAME (DETAIL)".
Result<std::vector<BackendDevice>> open_xrt_backend(const DeviceTarget& target, const XrtBackendOptions& options);

// What a build without XRT answers to `--device xrt`: what is missing and how to build with it.
inline constexpr const char* kXrtNotBuiltMessage =
    "this binary was built without XRT (CMake found no XRT headers and libraries), so it cannot drive an "
    "FPGA; install XRT (Debian amd64: libxrt-dev; a board: the PetaLinux/Yocto xrt package or the vendor's "
    "packages in the sysroot) and rebuild, with -DXRT_ROOT=<prefix> when XRT is not in a standard place";

}  // namespace tessera
