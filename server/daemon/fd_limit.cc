#include "server/daemon/fd_limit.h"

#include <sys/resource.h>

#include <algorithm>

namespace tessera {

FdLimitChange raise_fd_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return {};
  FdLimitChange change{limit.rlim_cur, limit.rlim_cur};
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) change.after = raised.rlim_cur;
  }
  return change;
}

uint64_t fd_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  return limit.rlim_cur;
}

size_t default_max_connections(uint64_t fd_limit) {
  const uint64_t reserve = std::max<uint64_t>(64, fd_limit / 4);
  return fd_limit > reserve ? static_cast<size_t>(fd_limit - reserve) : 1;
}

}  // namespace tessera
