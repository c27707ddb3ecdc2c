// resolve_xclbin (xrt_backend.h): the same in builds with and without XRT.
#include <cstdlib>
#include <system_error>

#include "accel/device/xrt/xrt_backend.h"

namespace tessera {

std::filesystem::path resolve_xclbin(const XrtBackendOptions& options) {
  if (!options.xclbin.empty()) return options.xclbin;
  if (const char* env = std::getenv("TESSERA_XCLBIN"); env != nullptr && env[0] != '\0') return env;
  for (const char* path : kDefaultXclbinPaths) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) return path;
  }
  return {};
}

}  // namespace tessera
