// The host's thread budget (host_threads.h): claims never exceed the limit together and come
// back on destruction; parallel_parts covers every index once, in whole grains, on the threads it
// was given, and rethrows a part's exception. And what the budget is for: a fully-connected
// layer split across threads (batch 1) gives the unsplit bits, and runs unsplit while another
// claim holds every helper.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "accel/host/host_threads.h"
#include "accel/host/reference_gemm.h"
#include "accel/host/reference_ops.h"

namespace tessera::host {
namespace {

TEST(HostThreads, ClaimsShareTheLimitAndComeBack) {
  const int limit = host_thread_limit();
  ASSERT_GE(limit, 1);
  {
    const HostThreads first(limit + 5);
    EXPECT_EQ(first.count(), limit);  // nothing else holds any
    const HostThreads second(limit);
    EXPECT_EQ(second.count(), 1);  // the caller's own thread only
    const HostThreads small(1);
    EXPECT_EQ(small.count(), 1);
  }
  const HostThreads again(limit);
  EXPECT_EQ(again.count(), limit);
}

TEST(HostThreads, PartialClaimLeavesTheRest) {
  const int limit = host_thread_limit();
  if (limit < 3) GTEST_SKIP() << "needs 3 hardware threads (TESSERA_HOST_THREADS=3 forces it), has " << limit;
  const HostThreads two(2);
  EXPECT_EQ(two.count(), 2);
  const HostThreads rest(limit);
  EXPECT_EQ(rest.count(), limit - 1);
}

TEST(HostThreads, ParallelPartsCoverEveryIndexOnceInWholeGrains) {
  const HostThreads threads(host_thread_limit());
  for (const int64_t n : {0, 1, 15, 16, 17, 1000, 1024}) {
    std::vector<int> hits(static_cast<size_t>(n), 0);
    std::mutex mutex;
    std::set<std::thread::id> ids;
    std::vector<std::pair<int64_t, int64_t>> parts;
    parallel_parts(threads, n, 16, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) ++hits[static_cast<size_t>(i)];  // disjoint ranges
      const std::lock_guard lock(mutex);
      ids.insert(std::this_thread::get_id());
      parts.emplace_back(begin, end);
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)], 1) << "n " << n << " index " << i;
    const int64_t grains = (n + 15) / 16;
    EXPECT_EQ(static_cast<int64_t>(parts.size()), std::max<int64_t>(1, std::min<int64_t>(threads.count(), grains)))
        << "n " << n;
    EXPECT_EQ(ids.size(), parts.size()) << "one thread a part";
    for (const auto& [begin, end] : parts) {
      EXPECT_EQ(begin % 16, 0) << "n " << n;
      if (end != n) {
        EXPECT_EQ(end % 16, 0) << "n " << n;
      }
    }
  }
}

TEST(HostThreads, ParallelPartsRethrowAfterEveryPartEnds) {
  const HostThreads threads(host_thread_limit());
  std::atomic<int> finished{0};
  auto throwing = [&](int64_t begin, int64_t) {
    if (begin > 0 || threads.count() == 1) throw std::runtime_error("part failed");
    ++finished;
  };
  EXPECT_THROW(parallel_parts(threads, 64, 16, throwing), std::runtime_error);
  EXPECT_EQ(finished.load(), threads.count() == 1 ? 0 : 1);
}

Tensor random(Shape shape, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Tensor t(std::move(shape));
  for (float& v : t.data) v = normal(rng);
  return t;
}

// An FC layer at batch 1 big enough to split (1024 -> 4096, B transposed as ONNX Gemm stores
// it), with and without the budget's helpers: the same bits as one unsplit dot-product pass.
TEST(HostThreads, FullyConnectedSplitGivesTheUnsplitBits) {
  std::mt19937 rng(26);
  const Tensor x = random({1, 1024}, rng), w = random({4096, 1024}, rng), bias = random({4096}, rng);
  GemmAttrs attrs;
  attrs.trans_b = true;
  std::vector<float> want(4096, 0.0f);
  sgemm_bt_accumulate(1, 4096, 1024, x.ptr(), 1024, w.ptr(), 1024, want.data(), 4096);
  for (size_t j = 0; j < want.size(); ++j) want[j] += bias.data[j];
  auto split = gemm(x, w, &bias, attrs);
  ASSERT_TRUE(split.is_ok()) << split.status().to_string();
  EXPECT_EQ(split->data, want);
  const HostThreads everything(host_thread_limit());  // the layer now runs on its caller alone
  auto alone = gemm(x, w, &bias, attrs);
  ASSERT_TRUE(alone.is_ok()) << alone.status().to_string();
  EXPECT_EQ(alone->data, want);
}

// The same for B not transposed (MatMul's FC, and Gemm without transB): columns split.
TEST(HostThreads, MatMulSplitGivesTheUnsplitBits) {
  std::mt19937 rng(27);
  const Tensor x = random({2, 1024}, rng), w = random({1024, 2048}, rng);
  std::vector<float> want(4096, 0.0f);
  sgemm_accumulate(2, 2048, 1024, x.ptr(), 1024, w.ptr(), 2048, want.data(), 2048);
  auto y = matmul(x, w);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(y->data, want);
}

}  // namespace
}  // namespace tessera::host
