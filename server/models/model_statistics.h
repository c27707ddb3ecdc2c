// What one served model version has done since it was loaded, as Triton's statistics extension
// reports it (docs/protocol/extension_statistics.md): requests that succeeded or failed with their
// durations, where the successful ones spent their time (queue, compute_input, compute_infer,
// compute_output), and the model's executions by batch size. Each ServedModel owns one, so a
// reload starts a new version's counters and an unload drops them with the version.
//
// What counts, after Triton's semantics: a request counts once it names a model version that is
// served; it succeeds when it gets its result, and fails when it does not (refused after its model
// was resolved: bad input, a full queue, a draining server; dropped past its deadline or cancelled
// while queued; a decode or device failure). A request naming no served model counts nowhere.
// Per request: success/fail and, for successes, the stage durations. Per execution (one model run
// of a batch): inference_count += the batch's images, execution_count += 1, and its batch size's
// compute durations.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>

namespace tessera {

// Where one request's (or one execution's) time went.
struct StageDurations {
  std::chrono::nanoseconds queue{0};           // submitted -> picked up by a worker
  std::chrono::nanoseconds compute_input{0};   // decode + preprocess into the batch tensor
  std::chrono::nanoseconds compute_infer{0};   // the model run (fabric and host stages)
  std::chrono::nanoseconds compute_output{0};  // building the result from the model's scores
};

// A count and the durations it summed (Triton's StatisticDuration).
struct DurationStat {
  uint64_t count = 0;
  uint64_t ns = 0;
};

// The executions of one batch size.
struct BatchStat {
  uint64_t batch_size = 0;
  DurationStat compute_input;
  DurationStat compute_infer;
  DurationStat compute_output;
};

// A consistent-enough copy of the counters (each read atomically; read while requests run, two
// counters may be one request apart).
struct ModelStatisticsSnapshot {
  uint64_t last_inference_ms = 0;  // ms since the epoch of the last request's end; 0: none yet
  uint64_t inference_count = 0;    // images run by the model
  uint64_t execution_count = 0;    // model runs (batches)
  DurationStat success;
  DurationStat fail;
  DurationStat queue;
  DurationStat compute_input;
  DurationStat compute_infer;
  DurationStat compute_output;
  std::map<uint64_t, BatchStat> batches;  // by batch size
};

class ModelStatistics {
 public:
  // A request that got its result, `elapsed` after it was received.
  void record_success(std::chrono::nanoseconds elapsed, const StageDurations& stages);
  // A request that got no result, `elapsed` after it was received.
  void record_failure(std::chrono::nanoseconds elapsed);
  // One model run of `batch_size` images; `stages.queue` is not used.
  void record_execution(uint64_t batch_size, const StageDurations& stages);

  ModelStatisticsSnapshot snapshot() const;

 private:
  // A lock-free StatisticDuration.
  struct AtomicDuration {
    std::atomic<uint64_t> count{0};
    std::atomic<uint64_t> ns{0};
    void add(std::chrono::nanoseconds d);
    DurationStat load() const;
  };
  void touch_last_inference();

  std::atomic<uint64_t> last_inference_ms_{0};
  AtomicDuration success_;
  AtomicDuration fail_;
  // queue, compute_input, compute_infer, compute_output of the successful requests.
  std::array<AtomicDuration, 4> stages_;
  mutable std::mutex batches_mu_;  // one short lock per execution (not per request); guards the three below
  uint64_t inference_count_ = 0;
  uint64_t execution_count_ = 0;
  std::map<uint64_t, BatchStat> batches_;
};

}  // namespace tessera
