#include "accel/device/emu/emu_thread_pool.h"

#include <algorithm>

namespace tessera::emu {

EmuThreadPool::EmuThreadPool(unsigned threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned i = 1; i < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

EmuThreadPool::~EmuThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void EmuThreadPool::run_tasks() {
  const bool timed = deadline_ != Deadline::max();
  for (size_t i = next_.fetch_add(1); i < count_; i = next_.fetch_add(1)) {
    // One clock read per task (tens of ns; a task is a block of a layer, microseconds or more).
    if (timed && std::chrono::steady_clock::now() > deadline_) {
      expired_.store(true, std::memory_order_relaxed);
      return;
    }
    (*fn_)(i);
  }
}

void EmuThreadPool::worker_loop() {
  unsigned long seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      // A job its caller has already finished (this worker woke late: descheduled, or the job
      // was short) is not joined; the caller does not wait for workers that never joined.
      if (closed_) continue;
      ++active_;
    }
    run_tasks();
    std::lock_guard<std::mutex> lock(mu_);
    if (--active_ == 0 && closed_) done_cv_.notify_one();
  }
}

bool EmuThreadPool::parallel_for(size_t count, const std::function<void(size_t)>& fn, Deadline deadline) {
  if (count == 0) return true;
  std::lock_guard<std::mutex> run_lock(run_mu_);
  const bool share = !workers_.empty() && count > 1;  // alone, the caller runs every task itself
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    count_ = count;
    deadline_ = deadline;
    next_.store(0);
    expired_.store(false);
    closed_ = !share;
    active_ = 0;
    if (share) ++generation_;
  }
  if (share) start_cv_.notify_all();
  run_tasks();
  // Every task is claimed now: close the job to late workers, wait for those inside it.
  std::unique_lock<std::mutex> lock(mu_);
  closed_ = true;
  done_cv_.wait(lock, [&] { return active_ == 0; });
  fn_ = nullptr;
  return !expired_.load();
}

}  // namespace tessera::emu
