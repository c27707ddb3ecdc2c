#include "server/http/connection_count.h"

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
    closed_.notify_all();
  }
}

size_t HttpConnections::busy() const {
  std::lock_guard lock(mu_);
  return busy_;
}

bool HttpConnections::wait_until_closed(std::chrono::steady_clock::time_point idle_deadline,
                                        std::chrono::steady_clock::time_point busy_deadline) {
  std::unique_lock lock(mu_);
  if (closed_.wait_until(lock, idle_deadline, [this] { return open_ == 0; })) return true;
  closed_.wait_until(lock, busy_deadline, [this] { return open_ == 0 || busy_ == 0; });
  return open_ == 0;
}

}  // namespace tessera
