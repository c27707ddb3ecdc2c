// The host's thread budget: how many threads the reference kernels (conv, GEMM, the batch split)
// use at once across every caller in the process: fp32 engines, calibration, the int8 path's
// host stage (FC layers). A kernel that would split its work asks for helper threads and gets
// only those no other kernel holds, so one batch alone uses every core (batch 1 included), and
// two batches running side by side (the engine's concurrent callers, the batch split's halves)
// each keep their own thread instead of splitting again onto the same cores.
#pragma once

#include <cstdint>
#include <functional>

namespace tessera::host {

// The most threads the host kernels use in all: TESSERA_HOST_THREADS when set (>= 1), else the
// hardware threads. Read once.
int host_thread_limit();

// A claim on the budget: the caller's own thread plus the helpers it got. Returned on destruction.
class HostThreads {
 public:
  // Asks for up to `wanted` threads in all (the caller's included); gets at least 1.
  explicit HostThreads(int wanted);
  ~HostThreads();
  HostThreads(const HostThreads&) = delete;
  HostThreads& operator=(const HostThreads&) = delete;

  // Threads this claim may use, >= 1.
  int count() const { return 1 + helpers_; }

 private:
  int helpers_ = 0;
};

// Runs fn(begin, end) over [0, n) cut into `threads.count()` contiguous parts of whole `grain`s
// (the last part takes the rest), one per thread, the first on the caller's thread. Helpers are
// std::threads started for the call: the kernels that split (a conv or FC layer) take hundreds of
// microseconds at least, against tens for a thread start, and a pool would hold threads that the
// emulator and the server need between batches. An exception in a part is rethrown after all join.
void parallel_parts(const HostThreads& threads, int64_t n, int64_t grain,
                    const std::function<void(int64_t, int64_t)>& fn);

// parallel_parts over [0, n) with threads claimed from the budget when the work is worth a thread
// start: `n` units of about `unit_cost` operations each, split when they total at least `min_work`
// (operations; a thread start is tens of microseconds, so ~1M simple operations). Otherwise, or
// when every helper is taken, fn(0, n) on the caller's thread.
void parallel_for(int64_t n, int64_t unit_cost, int64_t min_work, const std::function<void(int64_t, int64_t)>& fn);

// Elements of an elementwise pass above which it is split across the host's threads (a few
// hundred microseconds of memory traffic against tens for a thread start): parallel_for's
// `min_work` for the unary and binary ops.
inline constexpr int64_t kSplitElements = int64_t{1} << 18;

}  // namespace tessera::host
