#include "server/models/model_statistics.h"

#include <algorithm>

namespace tessera {
namespace {

uint64_t to_ns(std::chrono::nanoseconds d) { return static_cast<uint64_t>(std::max<int64_t>(d.count(), 0)); }

void add_to(DurationStat& stat, std::chrono::nanoseconds d) {
  ++stat.count;
  stat.ns += to_ns(d);
}

}  // namespace

void ModelStatistics::AtomicDuration::add(std::chrono::nanoseconds d) {
  count.fetch_add(1, std::memory_order_relaxed);
  ns.fetch_add(to_ns(d), std::memory_order_relaxed);
}

DurationStat ModelStatistics::AtomicDuration::load() const {
  return {count.load(std::memory_order_relaxed), ns.load(std::memory_order_relaxed)};
}

void ModelStatistics::touch_last_inference() {
  const auto now =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch());
  const uint64_t ms = static_cast<uint64_t>(std::max<int64_t>(now.count(), 0));
  // Answers finish out of order: the newest one wins.
  uint64_t seen = last_inference_ms_.load(std::memory_order_relaxed);
  while (seen < ms && !last_inference_ms_.compare_exchange_weak(seen, ms, std::memory_order_relaxed)) {}
}

void ModelStatistics::record_success(std::chrono::nanoseconds elapsed, const StageDurations& stages) {
  success_.add(elapsed);
  stages_[0].add(stages.queue);
  stages_[1].add(stages.compute_input);
  stages_[2].add(stages.compute_infer);
  stages_[3].add(stages.compute_output);
  touch_last_inference();
}

void ModelStatistics::record_failure(std::chrono::nanoseconds elapsed) {
  fail_.add(elapsed);
  touch_last_inference();
}

void ModelStatistics::record_execution(uint64_t batch_size, const StageDurations& stages) {
  std::lock_guard lock(batches_mu_);
  BatchStat& batch = batches_[batch_size];
  batch.batch_size = batch_size;
  add_to(batch.compute_input, stages.compute_input);
  add_to(batch.compute_infer, stages.compute_infer);
  add_to(batch.compute_output, stages.compute_output);
  inference_count_ += batch_size;
  ++execution_count_;
}

ModelStatisticsSnapshot ModelStatistics::snapshot() const {
  ModelStatisticsSnapshot s;
  s.last_inference_ms = last_inference_ms_.load(std::memory_order_relaxed);
  {
    std::lock_guard lock(batches_mu_);
    s.inference_count = inference_count_;
    s.execution_count = execution_count_;
    s.batches = batches_;
  }
  s.success = success_.load();
  s.fail = fail_.load();
  s.queue = stages_[0].load();
  s.compute_input = stages_[1].load();
  s.compute_infer = stages_[2].load();
  s.compute_output = stages_[3].load();
  return s;
}

}  // namespace tessera
