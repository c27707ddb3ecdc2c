#include "server/http/connection_count.h"

#include <algorithm>

namespace tessera {

ConnectionSlot HttpConnections::try_open() {
  {
    std::lock_guard lock(mu_);
    if (open_ >= max_open_) {
      ++refused_;
      return nullptr;
    }
    ++open_;
  }
  // Points at this without owning it: the last copy's deleter gives the place back.
  return ConnectionSlot(this, [](HttpConnections* connections) { connections->release(); });
}

void HttpConnections::release() {
  std::lock_guard lock(mu_);
  if (--open_ == 0) closed_.notify_all();
}

size_t HttpConnections::open() const {
  std::lock_guard lock(mu_);
  return open_;
}

uint64_t HttpConnections::refused() const {
  std::lock_guard lock(mu_);
  return refused_;
}

void HttpConnections::start_draining() {
  std::lock_guard lock(mu_);
  draining_ = true;
}

bool HttpConnections::draining() const {
  std::lock_guard lock(mu_);
  return draining_;
}

void HttpConnections::busy_changed(bool busy) {
  std::lock_guard lock(mu_);
  if (busy) {
    ++busy_;
  } else if (--busy_ == 0) {
    became_idle_at_ = std::chrono::steady_clock::now();
    closed_.notify_all();
  }
}

size_t HttpConnections::busy() const {
  std::lock_guard lock(mu_);
  return busy_;
}

bool HttpConnections::wait_until_closed(std::chrono::milliseconds grace,
                                        std::chrono::steady_clock::time_point deadline) {
  const auto start = std::chrono::steady_clock::now();
  std::unique_lock lock(mu_);
  while (open_ != 0) {
    // Woken when a connection closes or the last busy one becomes idle; then the grace restarts.
    const auto until = busy_ != 0 ? deadline : std::min(deadline, std::max(start, became_idle_at_) + grace);
    if (std::chrono::steady_clock::now() >= until) return false;
    closed_.wait_until(lock, until);
  }
  return true;
}

}  // namespace tessera
