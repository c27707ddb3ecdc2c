#include "server/telemetry/event_stream_hub.h"

#include <vector>

namespace tessera {

uint64_t EventStreamHub::add(std::function<void()> wake) {
  uint64_t id = 0;
  {
    std::lock_guard lock(mu_);
    id = next_id_++;
    if (!woken_) {
      wakes_.emplace(id, std::move(wake));
      return id;
    }
  }
  wake();  // draining already
  return id;
}

void EventStreamHub::remove(uint64_t id) {
  std::lock_guard lock(mu_);
  wakes_.erase(id);
}

void EventStreamHub::wake_all() {
  std::vector<std::function<void()>> wakes;
  {
    std::lock_guard lock(mu_);
    woken_ = true;
    for (const auto& [id, wake] : wakes_) wakes.push_back(wake);
  }
  // Outside the lock: a wake may end the last owner of a stream, whose source then removes itself.
  for (const auto& wake : wakes) wake();
}

}  // namespace tessera
