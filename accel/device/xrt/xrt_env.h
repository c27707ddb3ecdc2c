// XILINX_XRT for Debian's XRT packaging. libxrt_coreutil loads its device shim with
// dlopen("$XILINX_XRT/lib/libxrt_core.so.2") and throws "XILINX_XRT not set" when the variable is
// missing; Debian installs the libraries into /usr/lib/<multiarch>/ and sets nothing. The daemon
// therefore makes a small prefix whose lib/ is a symlink to the directory XRT was loaded from and
// points XILINX_XRT at it, before its first XRT call. No XRT headers here.
#pragma once

#include <filesystem>

#include "accel/common/status.h"

namespace tessera {

// Leaves a non-empty XILINX_XRT alone. Otherwise finds the directory libxrt_coreutil was loaded
// from (it must also hold the shim libxrt_core.so.2), makes the prefix with make_xrt_prefix() under
// $XDG_RUNTIME_DIR or /tmp, and setenv()s XILINX_XRT to it. Idempotent and serialised by a mutex;
// call it before other threads read the environment (setenv is not thread-safe against getenv).
// Every XRT entry point of accel/device/xrt/ calls it first.
Status ensure_xilinx_xrt_env();

// The directory holding the libxrt_coreutil this process is linked against (via dladdr).
Result<std::filesystem::path> xrt_library_dir();

// Makes (or reuses) `parent`/tessera-xrt-<uid>/lib -> `lib_dir` and returns the prefix. Refuses a
// prefix that is a symlink, not ours or writable by others (the link decides which code XRT
// dlopen()s). A wrong or stale lib link is replaced atomically (symlink + rename), so concurrent
// callers race harmlessly.
Result<std::filesystem::path> make_xrt_prefix(const std::filesystem::path& parent,
                                              const std::filesystem::path& lib_dir);

}  // namespace tessera
