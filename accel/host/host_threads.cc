#include "accel/host/host_threads.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace tessera::host {
namespace {

// Helper threads not claimed right now: host_thread_limit() - 1 at start.
std::atomic<int>& free_helpers() {
  static std::atomic<int> helpers{host_thread_limit() - 1};
  return helpers;
}

}  // namespace

int host_thread_limit() {
  static const int limit = [] {
    if (const char* env = std::getenv("TESSERA_HOST_THREADS"); env != nullptr && std::atoi(env) >= 1) {
      return std::atoi(env);
    }
    return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  }();
  return limit;
}

HostThreads::HostThreads(int wanted) {
  std::atomic<int>& pool = free_helpers();
  int available = pool.load();
  while (wanted > 1 && available > 0) {
    const int take = std::min(wanted - 1, available);
    if (pool.compare_exchange_weak(available, available - take)) {
      helpers_ = take;
      return;
    }
  }
}

HostThreads::~HostThreads() {
  if (helpers_ > 0) free_helpers().fetch_add(helpers_);
}

void parallel_parts(const HostThreads& threads, int64_t n, int64_t grain,
                    const std::function<void(int64_t, int64_t)>& fn) {
  const int64_t grains = (n + grain - 1) / std::max<int64_t>(grain, 1);
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(threads.count(), grains));
  if (parts == 1) {
    fn(0, n);
    return;
  }
  auto bound = [&](int64_t part) { return std::min(n, grains * part / parts * grain); };
  std::exception_ptr error;
  std::mutex error_mutex;
  auto run = [&](int64_t part) {
    try {
      fn(bound(part), part + 1 == parts ? n : bound(part + 1));
    } catch (...) {
      const std::lock_guard lock(error_mutex);
      if (!error) error = std::current_exception();
    }
  };
  std::vector<std::thread> helpers;
  helpers.reserve(static_cast<size_t>(parts - 1));
  for (int64_t part = 1; part < parts; ++part) {
    try {
      helpers.emplace_back(run, part);
    } catch (const std::system_error&) {
      run(part);  // no thread to be had: this part on the caller's thread
    }
  }
  run(0);
  for (auto& t : helpers) t.join();
  if (error) std::rethrow_exception(error);
}

void parallel_for(int64_t n, int64_t unit_cost, int64_t min_work, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 1 || n * std::max<int64_t>(unit_cost, 1) < min_work) {
    if (n > 0) fn(0, n);
    return;
  }
  const HostThreads threads(host_thread_limit());
  parallel_parts(threads, n, 1, fn);
}

}  // namespace tessera::host
