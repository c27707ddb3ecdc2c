#include "server/http/rate_limited_log.h"

#include <spdlog/spdlog.h>

namespace tessera {

void RateLimitedWarning::note(const std::string& what) {
  const auto now = std::chrono::steady_clock::now();
  uint64_t count = 0;
  double seconds = 0;
  {
    std::lock_guard lock(mu_);
    ++unlogged_;
    if (last_line_ && now - *last_line_ < interval_) return;
    if (last_line_) seconds = std::chrono::duration<double>(now - *last_line_).count();
    count = unlogged_;
    unlogged_ = 0;
    last_line_ = now;
  }
  if (seconds == 0) {
    spdlog::warn("{}", what);
  } else {
    spdlog::warn("{} ({} times in the last {:.0f} s; logged at most once per {:.0f} s)", what, count, seconds,
                 std::chrono::duration<double>(interval_).count());
  }
}

}  // namespace tessera
