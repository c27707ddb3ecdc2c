// Open streams (the HTTP side's server-sent events, gRPC telemetry watches), so shutdown can end
// them at once instead of at their next tick: each stream registers a wake function.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>

namespace tessera {

class EventStreamHub {
 public:
  // Registers a stream's wake function; after wake_all() it is called at once.
  uint64_t add(std::function<void()> wake);
  void remove(uint64_t id);
  // Wakes every open stream and each one added later (their sources then see the drain).
  void wake_all();

 private:
  std::mutex mu_;
  std::map<uint64_t, std::function<void()>> wakes_;
  uint64_t next_id_ = 1;
  bool woken_ = false;
};

}  // namespace tessera
