// The bounded queue between the request handlers and the model: handlers submit jobs and
// return; worker threads decode, preprocess, run the model and call each job back.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "accel/common/status.h"
#include "accel/image/image.h"
#include "server/classify_result.h"

namespace tessera {

struct ServedModel;

using SteadyClock = std::chrono::steady_clock;

// Receives a job's result, or the Status saying why there is none.
using InferenceCallback = std::function<void(Result<ClassifyResult>)>;

// One image to classify, as a handler hands it over after validating the request.
struct InferenceJob {
  const ServedModel* model = nullptr;
  // The encoded image. The submitter keeps these bytes alive until `done` has run.
  std::span<const uint8_t> image;
  int top_k = kDefaultTopK;
  std::string request_id;
  const char* via = "";  // "grpc" or "http", for the log line
  SteadyClock::time_point received = SteadyClock::now();
  // A job still queued at its deadline is answered DEADLINE_EXCEEDED instead of run.
  SteadyClock::time_point deadline = SteadyClock::time_point::max();
  // True once the caller has gone away; such a job is answered CANCELLED instead of run.
  std::function<bool()> cancelled;
  InferenceCallback done;
};

struct InferenceQueueOptions {
  size_t capacity = 64;  // waiting jobs; one more is refused with RESOURCE_EXHAUSTED
  int workers = 2;       // inference threads
  DecodeLimits decode_limits;
};

class InferenceQueue {
 public:
  explicit InferenceQueue(InferenceQueueOptions options);
  ~InferenceQueue();
  InferenceQueue(const InferenceQueue&) = delete;
  InferenceQueue& operator=(const InferenceQueue&) = delete;

  // Hands a job over and returns at once; never waits for inference. `done` runs exactly once:
  // on a worker thread, or before submit() returns with RESOURCE_EXHAUSTED (queue full) or
  // UNAVAILABLE (stopped).
  void submit(InferenceJob job);

  // Refuses new jobs, lets the workers finish the queued ones, joins them. Idempotent.
  void stop();

  // Jobs waiting for a worker.
  size_t depth() const;
  const InferenceQueueOptions& options() const { return options_; }

 private:
  struct QueuedJob {
    InferenceJob job;
    SteadyClock::time_point enqueued;
  };

  void worker_loop();
  // The batching policy: blocks until there is work and takes the next batch (jobs of one
  // model); empty once stopped and drained. Takes one job for now; the dynamic batcher
  // (max_batch, max_queue_delay) replaces this and nothing else.
  std::vector<QueuedJob> take_batch();
  // Decodes each job into its slot of one batch tensor, runs the model once, answers every job.
  void run_batch(std::vector<QueuedJob> batch);

  const InferenceQueueOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<QueuedJob> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace tessera
