#include "server/batching/in_flight.h"

namespace tessera {

bool InFlightTracker::try_begin() {
  std::lock_guard lock(mu_);
  if (draining_) {
    last_refusal_ = std::chrono::steady_clock::now();
    return false;
  }
  ++running_;
  return true;
}

void InFlightTracker::end() {
  std::lock_guard lock(mu_);
  if (--running_ == 0) idle_.notify_all();
}

void InFlightTracker::start_draining() {
  std::lock_guard lock(mu_);
  if (!draining_) last_refusal_ = std::chrono::steady_clock::now();
  draining_ = true;
}

std::chrono::steady_clock::time_point InFlightTracker::last_refusal() const {
  std::lock_guard lock(mu_);
  return last_refusal_;
}

bool InFlightTracker::draining() const {
  std::lock_guard lock(mu_);
  return draining_;
}

bool InFlightTracker::wait_until_idle(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mu_);
  return idle_.wait_until(lock, deadline, [this] { return running_ == 0; });
}

int InFlightTracker::running() const {
  std::lock_guard lock(mu_);
  return running_;
}

}  // namespace tessera
