// Counts requests being served so shutdown can refuse new ones and wait for the rest.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace tessera {

class InFlightTracker {
 public:
  // Registers a request; false once draining (the caller refuses it with UNAVAILABLE).
  bool try_begin();
  // The request registered by try_begin() has been answered.
  void end();

  // From now on try_begin() fails.
  void start_draining();
  // True once start_draining() ran (readiness answers "not ready").
  bool draining() const;
  // When try_begin() last refused a request (start_draining()'s time when none has been).
  std::chrono::steady_clock::time_point last_refusal() const;
  // Waits until every registered request has ended, at most until `deadline`; false on timeout.
  bool wait_until_idle(std::chrono::steady_clock::time_point deadline);
  int running() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable idle_;
  int running_ = 0;
  bool draining_ = false;
  std::chrono::steady_clock::time_point last_refusal_;
};

}  // namespace tessera
