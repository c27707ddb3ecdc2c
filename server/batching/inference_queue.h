// The dynamic batcher between the request handlers and the models: handlers submit jobs and
// return; each model has its own bounded queue, and worker threads take batches of one model —
// as soon as max_batch jobs wait, or when the oldest has waited max_queue_delay_us — decode
// them, run the model once and call every job back. A full queue refuses at once
// (RESOURCE_EXHAUSTED); jobs past their deadline or cancelled by their caller are answered
// before the batch reaches the model and never take a slot on the fabric.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "accel/common/status.h"
#include "accel/image/image.h"
#include "server/batching/classify_result.h"
#include "server/batching/inference_job.h"

namespace tessera {

struct Inference;
struct ServedModel;

// What the batcher tells the daemon's statistics (metrics, telemetry). Called on worker threads
// (and on the submitter's thread for refusals); implementations are thread-safe and quick.
class QueueObserver {
 public:
  virtual ~QueueObserver() = default;
  // A batch of `size` jobs of `model` goes to the model.
  virtual void on_batch(const ServedModel& model, size_t size) = 0;
  // A job is answered: a result or the reason there is none.
  virtual void on_answer(const InferenceJob& job, const Result<ClassifyResult>& result) = 0;
};

struct InferenceQueueOptions {
  int workers = 2;  // batches in flight at once (the int8 engine overlaps their stages)
  DecodeLimits decode_limits;
  QueueObserver* observer = nullptr;
};

class InferenceQueue {
 public:
  explicit InferenceQueue(InferenceQueueOptions options);
  ~InferenceQueue();
  InferenceQueue(const InferenceQueue&) = delete;
  InferenceQueue& operator=(const InferenceQueue&) = delete;

  // Hands a job over and returns at once; never waits for inference. `done` runs exactly once:
  // on a worker thread, or before submit() returns with RESOURCE_EXHAUSTED (the model's queue
  // is full) or UNAVAILABLE (stopped). Returns a ticket for cancel(), 0 when already answered.
  uint64_t submit(InferenceJob job);

  // Takes a still-queued job out and answers it CANCELLED at once; false when it already left
  // the queue (it is then answered by its batch).
  bool cancel(uint64_t ticket);

  // Refuses new jobs, lets the workers answer every queued one (without waiting for company),
  // joins them. Idempotent.
  void stop();

  // Jobs waiting, in all queues or in one model's.
  size_t depth() const;
  size_t depth(const ServedModel* model) const;
  const InferenceQueueOptions& options() const { return options_; }

 private:
  struct QueuedJob {
    InferenceJob job;
    uint64_t ticket = 0;
    SteadyClock::time_point enqueued;
  };
  using Queue = std::deque<QueuedJob>;

  void worker_loop();
  // Blocks until a model's batch is ready (full, or its oldest job waited long enough, or
  // stopping) and takes it; drops expired and cancelled jobs into `dropped` on the way. Empty
  // once stopped and drained.
  std::vector<QueuedJob> take_batch(std::vector<std::pair<QueuedJob, Status>>& dropped);
  // Decodes each job into its slot of one batch tensor, runs the model once, answers every job.
  void run_batch(std::vector<QueuedJob> batch);
  // Each running job's result from the batch's inference; `stages` so far (queue, input, infer).
  static std::vector<ClassifyResult> build_results(const ServedModel& model, const std::vector<QueuedJob*>& running,
                                                   const Inference& inference,
                                                   const std::vector<StageDurations>& stages);
  void answer(InferenceJob& job, Result<ClassifyResult> result);

  const InferenceQueueOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<const ServedModel*, Queue> queues_;
  uint64_t next_ticket_ = 1;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace tessera
