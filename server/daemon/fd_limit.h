// The process's file-descriptor limit (RLIMIT_NOFILE) and the HTTP connection bound taken from it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera {

// The soft limit before and after raise_fd_limit().
struct FdLimitChange {
  uint64_t before = 0;
  uint64_t after = 0;
};

// Raises the soft RLIMIT_NOFILE to the hard limit (the most an unprivileged process may have).
FdLimitChange raise_fd_limit();
// The soft RLIMIT_NOFILE in force now.
uint64_t fd_limit();
// The default HTTP connection bound under `fd_limit`: a quarter of the descriptors (at least 64)
// stay free for gRPC, model files, logs and the daemon's own pipes; at least 1.
size_t default_max_connections(uint64_t fd_limit);

}  // namespace tessera
