// The emulator's thread pool: every task runs once; past a deadline no further task starts, the
// call says so, and the pool serves the next call whole. (A run's timeout reaches each layer's
// tasks this way: tests/unit/regressions, FuzzRegressions.OneLargeLayerIsAbandonedAtTheRunTimeout.)
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <thread>
#include <vector>

#include "accel/device/emu/emu_thread_pool.h"

namespace tessera::emu {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

TEST(EmuThreadPool, RunsEveryTaskOnceAndSaysSo) {
  for (const unsigned threads : {1u, 2u, 4u}) {
    EmuThreadPool pool(threads);
    std::vector<std::atomic<int>> runs(1000);
    EXPECT_TRUE(pool.parallel_for(runs.size(), [&](size_t i) { runs[i].fetch_add(1); }));
    for (size_t i = 0; i < runs.size(); ++i)
      ASSERT_EQ(runs[i].load(), 1) << "task " << i << ", " << threads << " threads";
    EXPECT_TRUE(pool.parallel_for(0, [](size_t) {})) << "nothing to do is done";
  }
}

TEST(EmuThreadPool, NoTaskStartsAfterThePassedDeadline) {
  for (const unsigned threads : {1u, 2u}) {
    EmuThreadPool pool(threads);
    std::atomic<size_t> ran{0};
    EXPECT_FALSE(pool.parallel_for(
        100, [&](size_t) { ran.fetch_add(1); }, steady_clock::now() - milliseconds(1)));
    EXPECT_EQ(ran.load(), 0u) << threads << " threads";
    EXPECT_FALSE(pool.parallel_for(
        1, [&](size_t) { ran.fetch_add(1); }, steady_clock::now() - milliseconds(1)));
    EXPECT_EQ(ran.load(), 0u) << "a lone task is checked too";
  }
}

// Tasks of at least 2 ms each: 1000 of them need at least 1 s on two threads, so a 20 ms deadline
// stops the call part-way whatever the machine's speed; the next call, without one, runs whole.
TEST(EmuThreadPool, DeadlineStopsACallPartWayAndThePoolGoesOn) {
  EmuThreadPool pool(2);
  std::atomic<size_t> ran{0};
  const auto slow = [&](size_t) {
    std::this_thread::sleep_for(milliseconds(2));
    ran.fetch_add(1);
  };
  EXPECT_FALSE(pool.parallel_for(1000, slow, steady_clock::now() + milliseconds(20)));
  EXPECT_LT(ran.load(), 1000u);
  ran = 0;
  EXPECT_TRUE(pool.parallel_for(50, slow));
  EXPECT_EQ(ran.load(), 50u);
}

}  // namespace
}  // namespace tessera::emu
