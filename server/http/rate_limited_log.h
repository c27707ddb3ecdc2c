// A warning that may recur very often (a failing accept, refused connections) logged at most once
// per interval, each line saying how often it happened since the previous one.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

namespace tessera {

class RateLimitedWarning {
 public:
  explicit RateLimitedWarning(std::chrono::steady_clock::duration interval) : interval_(interval) {}

  // Counts one occurrence of `what`; logs it (with the count) when it is the first, or when the
  // interval since the last line is over. Thread-safe.
  void note(const std::string& what);

 private:
  const std::chrono::steady_clock::duration interval_;
  mutable std::mutex mu_;
  std::optional<std::chrono::steady_clock::time_point> last_line_;
  uint64_t unlogged_ = 0;  // occurrences since the last line
};

}  // namespace tessera
