// The dynamic batcher between admission and the models: admission submits jobs whose inputs its
// input stage has made ready (input_stage.h: decoded and preprocessed on the admitting thread, so a
// batch never waits for its images' decodes) and returns; each model has its own bounded queue,
// and worker threads take batches of one model — as soon as max_batch jobs wait, or when the
// oldest has waited max_queue_delay_us — gather their ready tensors, run the model once and call
// every job back. A full queue refuses at once (RESOURCE_EXHAUSTED); jobs past their deadline or
// cancelled by their caller are answered before the batch reaches the model and never take a slot
// on the fabric.
// An idle daemon runs a latency model's job at once on the submitter's thread: with
// max_queue_delay_us 0, nothing queued and no batch running, the job is a batch of one that no
// worker could start sooner, and the hand-off to a worker (a thread wake, 10-20 us) is saved.
// Such a batch counts against `workers` like a worker's, so the bound on batches in flight holds.
// A batch grows while the device is busy: one whose oldest job waited max_queue_delay_us but that
// is not full waits, taking every job that arrives meanwhile, as long as each device instance of
// its model already has a batch in its first fabric segment (the backend's
// BatchListener::device_free, accel/runtime/inference_backend.h; fp32: the whole run, the host's
// cores being its device); sent then it would only wait at the engine with fewer
// images. A full batch still goes at once (the next one waits at the engine: the pipeline), and
// so does everything when stopping; deadlines and cancellation hold while a batch waits.
#pragma once

#include <atomic>
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
  QueueObserver* observer = nullptr;
  // Run a job on the submitter's thread when the queue is idle and its model's
  // max_queue_delay_us is 0 (InferenceJob::may_run_inline too). Off: every job goes to a worker.
  bool run_inline_when_idle = true;
  // A batch that is not full waits past max_queue_delay_us, growing, while every device instance
  // of its model has a batch in its fabric stage (see above). Off: it leaves at the delay.
  bool grow_while_busy = true;
};

class InferenceQueue {
 public:
  explicit InferenceQueue(InferenceQueueOptions options);
  ~InferenceQueue();
  InferenceQueue(const InferenceQueue&) = delete;
  InferenceQueue& operator=(const InferenceQueue&) = delete;

  // Queues the job (its input ready: input_stage.h) and returns; waits for inference only when it
  // runs the job itself (idle, delay 0: see above). `done` runs exactly once: on a worker thread,
  // or before submit() returns with the job's result (run here), RESOURCE_EXHAUSTED (the model's
  // queue is full), UNAVAILABLE (stopped) or INTERNAL (its input was not made ready). Returns a
  // ticket for cancel(), 0 when already answered.
  uint64_t submit(InferenceJob job);

  // Why submit() would refuse `job` now (stopping, or its model's queue full); OK when it would
  // take it. Admission asks before paying for a decode.
  Status accepts(const InferenceJob& job) const;

  // Answers a job that never reached the queue (its input did not decode, say) as the queue
  // answers every job: logged, told to the observer, called back.
  void answer_unqueued(InferenceJob job, Status why);

  // Takes a still-queued job out and answers it CANCELLED at once; false when it already left
  // the queue (it is then answered by its batch).
  bool cancel(uint64_t ticket);

  // Refuses new jobs, lets the workers answer every queued one (without waiting for company),
  // joins them. Idempotent.
  void stop();

  // Jobs waiting, in all queues or in one model's.
  size_t depth() const;
  size_t depth(const ServedModel* model) const;
  // Jobs submit() ran on the submitter's thread so far (the idle, delay-0 path).
  uint64_t ran_inline() const { return ran_inline_.load(std::memory_order_relaxed); }
  const InferenceQueueOptions& options() const { return options_; }

 private:
  struct QueuedJob {
    InferenceJob job;
    uint64_t ticket = 0;
    SteadyClock::time_point enqueued;
  };
  using Queue = std::deque<QueuedJob>;

  // accepts(), mu_ held.
  Status refusal(const InferenceJob& job) const;
  void worker_loop();
  // Whether `job`, about to be queued, runs on the submitter's thread instead; if so, counts it
  // as a running batch. mu_ held.
  bool take_inline(const InferenceJob& job);
  // Runs one job as a batch of one on this thread (after take_inline), then lets a worker go on.
  void run_inline(InferenceJob job);
  // A batch is over: one fewer running; wakes a worker when jobs wait for one.
  void batch_done();
  // Whether a not-full batch of `model` waits: each of its device instances has a batch in its
  // fabric stage. mu_ held.
  bool device_busy(const ServedModel* model) const;
  // A batch of `model` taken (mu_ held) / out of its fabric stage (takes mu_, wakes a worker).
  void fabric_taken(const ServedModel* model);
  void fabric_left(const ServedModel* model);
  // Blocks until a model's batch is ready (full, or its oldest job waited long enough, or
  // stopping) and takes it; drops expired and cancelled jobs into `dropped` on the way. Empty
  // once stopped and drained.
  std::vector<QueuedJob> take_batch(std::vector<std::pair<QueuedJob, Status>>& dropped);
  // Gathers each job's prepared input into one batch tensor, runs the model once, answers every job.
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
  std::atomic<uint64_t> ran_inline_{0};
  std::map<const ServedModel*, size_t> in_fabric_;  // per model: batches taken, fabric stage not over
  int running_ = 0;  // batches taken and not yet answered (workers' and inline): at most max_running_
  const int max_running_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace tessera
