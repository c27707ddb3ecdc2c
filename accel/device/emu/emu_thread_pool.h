// EmuThreadPool: the emulator's workers. One pool per EmuDevice; parallel_for() calls are
// serialised (the pool models one fabric), and the calling thread works alongside the workers.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tessera::emu {

class EmuThreadPool {
 public:
  // threads == 0: one per hardware thread. The caller counts as one, so threads - 1 are spawned.
  explicit EmuThreadPool(unsigned threads = 0);
  ~EmuThreadPool();
  EmuThreadPool(const EmuThreadPool&) = delete;
  EmuThreadPool& operator=(const EmuThreadPool&) = delete;

  unsigned size() const { return static_cast<unsigned>(workers_.size()) + 1; }

  using Deadline = std::chrono::steady_clock::time_point;

  // Calls fn(i) for every i in [0, count), spread dynamically over the pool; returns when all
  // calls have returned. The caller takes tasks too and, once none is left, waits only for the
  // workers that took part (not for one still waking up: on a busy machine that was a time slice). fn must not throw
  // and must not call parallel_for itself. Past the deadline no further call starts (one under way runs to its end):
  // returns false when any i was skipped that way, true when every call ran.
  bool parallel_for(size_t count, const std::function<void(size_t)>& fn, Deadline deadline = Deadline::max());

 private:
  void worker_loop();
  // Claims and runs tasks until none is left or the deadline has passed.
  void run_tasks();

  std::vector<std::thread> workers_;
  std::mutex run_mu_;  // one parallel_for at a time
  std::mutex mu_;
  std::condition_variable start_cv_;
  std::condition_variable done_cv_;
  const std::function<void(size_t)>* fn_ = nullptr;
  size_t count_ = 0;
  Deadline deadline_ = Deadline::max();
  std::atomic<size_t> next_{0};
  std::atomic<bool> expired_{false};  // some task was skipped at the deadline
  unsigned active_ = 0;               // workers inside the current job
  bool closed_ = true;                // the current job's caller ran out of tasks: no worker joins now
  unsigned long generation_ = 0;
  bool stop_ = false;
};

}  // namespace tessera::emu
