// Stands in for the xrt backend in builds that found no XRT (see xrt_backend.h): nothing to
// count, nothing to open, and a message saying how to get a build that can.
#include "accel/device/xrt/xrt_backend.h"

namespace tessera {

bool xrt_backend_built() { return false; }

Result<unsigned> count_xrt_devices() { return Status::failed_precondition(kXrtNotBuiltMessage); }

Result<std::vector<BackendDevice>> open_xrt_backend(const DeviceTarget&, const XrtBackendOptions&) {
  return Status::failed_precondition(kXrtNotBuiltMessage);
}

}  // namespace tessera
