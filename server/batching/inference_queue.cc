#include "server/batching/inference_queue.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "server/batching/input_stage.h"
#include "server/batching/request_log.h"
#include "server/models/model_repository.h"

namespace tessera {
namespace {

// Why a job is answered without running: its deadline passed or its caller cancelled; else OK.
Status stale(const InferenceJob& job, SteadyClock::time_point now) {
  if (now >= job.deadline) return Status::deadline_exceeded("the deadline passed while the request was queued");
  if (job.cancelled && job.cancelled()) return Status::cancelled("the caller cancelled the request");
  return Status::ok();
}

uint64_t whole_micros(std::chrono::nanoseconds d) {
  return static_cast<uint64_t>(std::max<int64_t>(std::chrono::duration_cast<std::chrono::microseconds>(d).count(), 0));
}

}  // namespace

InferenceQueue::InferenceQueue(InferenceQueueOptions options)
    : options_(options), max_running_(options.workers > 0 ? options.workers : 1) {
  const int n = max_running_;
  workers_.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) workers_.emplace_back([this] { worker_loop(); });
}

InferenceQueue::~InferenceQueue() { stop(); }

// Logs the outcome, tells the observer and calls the job back; a throwing callback is logged,
// not propagated.
void InferenceQueue::answer(InferenceJob& job, Result<ClassifyResult> result) {
  const std::string& model = job.model ? job.model->name() : std::string();
  if (result) {
    log_request_done(job.via, job.request_id, model, input_bytes(job.input), *result);
  } else {
    log_request_failed(job.via, job.request_id, model, input_bytes(job.input), result.status());
  }
  if (options_.observer) options_.observer->on_answer(job, result);
  try {
    job.done(std::move(result));
  } catch (const std::exception& e) {
    spdlog::error("{} {}: completion callback threw: {}", job.via, job.request_id, e.what());
  }
}

Status InferenceQueue::refusal(const InferenceJob& job) const {
  if (stopping_) return Status::unavailable("the server is shutting down");
  const size_t capacity = job.model ? job.model->batching.max_queue : 1;
  auto it = queues_.find(job.model.get());
  if (it != queues_.end() && it->second.size() >= capacity) {
    return Status::resource_exhausted("the queue of model '" + job.model->name() + "' is full (" +
                                      std::to_string(capacity) + " requests); retry later");
  }
  return Status::ok();
}

Status InferenceQueue::accepts(const InferenceJob& job) const {
  std::lock_guard lock(mu_);
  return refusal(job);
}

void InferenceQueue::answer_unqueued(InferenceJob job, Status why) { answer(job, std::move(why)); }

uint64_t InferenceQueue::submit(InferenceJob job) {
  if (!input_ready(job)) {
    answer(job, Status::internal("the job's input was not made ready for its model (the input stage)"));
    return 0;
  }
  std::unique_lock lock(mu_);
  Status refused = refusal(job);
  if (refused.is_ok() && take_inline(job)) {
    lock.unlock();
    run_inline(std::move(job));
    return 0;
  }
  if (refused.is_ok()) {
    const uint64_t ticket = next_ticket_++;
    Queue& queue = queues_[job.model.get()];
    queue.push_back({std::move(job), ticket, SteadyClock::now()});
    lock.unlock();
    cv_.notify_one();
    return ticket;
  }
  lock.unlock();
  answer(job, std::move(refused));
  return 0;
}

bool InferenceQueue::take_inline(const InferenceJob& job) {
  if (!options_.run_inline_when_idle || !job.may_run_inline || stopping_ || running_ > 0) return false;
  if (job.model->batching.max_queue_delay_us != 0) return false;
  // Jobs waiting anywhere go first (queues_ holds no empty queue for long; check them all).
  for (const auto& [model, queue] : queues_) {
    if (!queue.empty()) return false;
  }
  ++running_;
  fabric_taken(job.model.get());
  return true;
}

bool InferenceQueue::device_busy(const ServedModel* model) const {
  if (!options_.grow_while_busy) return false;
  auto it = in_fabric_.find(model);
  return it != in_fabric_.end() && it->second >= model->engine->backend().instance_count();
}

void InferenceQueue::fabric_taken(const ServedModel* model) { ++in_fabric_[model]; }

void InferenceQueue::fabric_left(const ServedModel* model) {
  bool waiting = false;
  {
    std::lock_guard lock(mu_);
    auto it = in_fabric_.find(model);
    if (it == in_fabric_.end()) return;
    if (--it->second == 0) in_fabric_.erase(it);  // the model may be unloaded: hold no stale key
    auto queue = queues_.find(model);
    waiting = queue != queues_.end() && !queue->second.empty();
  }
  if (waiting) cv_.notify_one();  // a batch held for the device may go now
}

void InferenceQueue::run_inline(InferenceJob job) {
  ran_inline_.fetch_add(1, std::memory_order_relaxed);
  std::vector<QueuedJob> batch;
  batch.push_back({std::move(job), 0, SteadyClock::now()});
  InferenceJob& only = batch.front().job;
  // As take_batch would: a job past its deadline or cancelled is answered, not run.
  if (Status why = stale(only, SteadyClock::now()); !why.is_ok()) {
    fabric_left(only.model.get());
    answer(only, std::move(why));
  } else {
    if (options_.observer) options_.observer->on_batch(*only.model, 1);
    run_batch(std::move(batch));
  }
  batch_done();
}

void InferenceQueue::batch_done() {
  bool waiting = false;
  {
    std::lock_guard lock(mu_);
    --running_;
    for (const auto& [model, queue] : queues_) waiting = waiting || !queue.empty();
  }
  if (waiting) cv_.notify_one();
}

bool InferenceQueue::cancel(uint64_t ticket) {
  QueuedJob taken;
  {
    std::lock_guard lock(mu_);
    bool found = false;
    for (auto& [model, queue] : queues_) {
      auto it = std::find_if(queue.begin(), queue.end(), [&](const QueuedJob& q) { return q.ticket == ticket; });
      if (it == queue.end()) continue;
      taken = std::move(*it);
      queue.erase(it);
      found = true;
      break;
    }
    if (!found) return false;
  }
  answer(taken.job, Status::cancelled("the caller cancelled the request"));
  return true;
}

void InferenceQueue::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& worker : workers_) {
    if (worker.joinable()) worker.join();
  }
}

size_t InferenceQueue::depth() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [model, queue] : queues_) n += queue.size();
  return n;
}

size_t InferenceQueue::depth(const ServedModel* model) const {
  std::lock_guard lock(mu_);
  auto it = queues_.find(model);
  return it == queues_.end() ? 0 : it->second.size();
}

void InferenceQueue::worker_loop() {
  for (;;) {
    std::vector<std::pair<QueuedJob, Status>> dropped;
    std::vector<QueuedJob> batch = take_batch(dropped);
    for (auto& [queued, why] : dropped) answer(queued.job, std::move(why));
    if (batch.empty()) {
      if (dropped.empty()) return;  // stopped and drained
      continue;
    }
    if (options_.observer) options_.observer->on_batch(*batch.front().job.model, batch.size());
    run_batch(std::move(batch));
    batch_done();
  }
}

std::vector<InferenceQueue::QueuedJob> InferenceQueue::take_batch(std::vector<std::pair<QueuedJob, Status>>& dropped) {
  std::unique_lock lock(mu_);
  for (;;) {
    const auto now = SteadyClock::now();
    // Expired and cancelled jobs leave every queue first: they never wait for a batch.
    for (auto& [model, queue] : queues_) {
      for (auto it = queue.begin(); it != queue.end();) {
        Status why = stale(it->job, now);
        if (why.is_ok()) {
          ++it;
          continue;
        }
        dropped.emplace_back(std::move(*it), std::move(why));
        it = queue.erase(it);
      }
    }
    // A queue left empty goes: its model may be unloaded, and nothing then holds the key's version.
    std::erase_if(queues_, [](const auto& entry) { return entry.second.empty(); });
    if (!dropped.empty()) return {};  // answer them outside the lock, then come back
    // The ready queue whose oldest job waited longest; else when the next one becomes ready.
    Queue* ready = nullptr;
    const ServedModel* ready_model = nullptr;
    auto wake = SteadyClock::time_point::max();
    for (auto& [model, queue] : queues_) {
      if (queue.empty()) continue;
      const BatchPolicy& policy = model->batching;
      const auto due = queue.front().enqueued + std::chrono::microseconds(policy.max_queue_delay_us);
      const bool full = queue.size() >= policy.max_batch;
      if (!stopping_ && !full && now >= due && device_busy(model)) {
        // Due but the device is busy: the batch grows until fabric_left() wakes us, or a job's
        // deadline passes (any job's: they wait past the delay now).
        for (const QueuedJob& queued : queue) wake = std::min(wake, queued.job.deadline);
      } else if (stopping_ || full || now >= due) {
        if (!ready || queue.front().enqueued < ready->front().enqueued) {
          ready = &queue;
          ready_model = model;
        }
      } else {
        wake = std::min({wake, due, queue.front().job.deadline});
      }
    }
    // Every batch slot taken (an inline run holds one): wait for batch_done().
    if (ready && running_ >= max_running_) {
      wake = std::min(wake, ready->front().job.deadline);
      ready = nullptr;
    }
    if (ready) {
      ++running_;
      fabric_taken(ready_model);
      const size_t n = std::min<size_t>(ready->size(), ready->front().job.model->batching.max_batch);
      std::vector<QueuedJob> batch;
      batch.reserve(n);
      for (size_t i = 0; i < n; ++i) {
        batch.push_back(std::move(ready->front()));
        ready->pop_front();
      }
      if (!ready->empty()) cv_.notify_one();  // more work for another worker
      return batch;
    }
    if (stopping_) return {};  // every queue is empty
    if (wake == SteadyClock::time_point::max()) {
      cv_.wait(lock);
    } else {
      cv_.wait_until(lock, wake);
    }
  }
}

void InferenceQueue::run_batch(std::vector<QueuedJob> batch) {
  const auto picked = SteadyClock::now();
  const ServedModel& model = *batch.front().job.model;
  const PreprocessConfig& input = model.config().input;
  const size_t slot = input_floats(model);
  spdlog::debug("batch model={} size={} oldest_wait_us={}", model.name(), batch.size(),
                micros_between(batch.front().enqueued, picked));

  // Every job's input was made ready by the input stage: the batch only gathers them.
  Tensor tensor({static_cast<int64_t>(batch.size()), input.channels, input.height, input.width});
  std::vector<QueuedJob*> running;
  std::vector<StageDurations> stages;
  running.reserve(batch.size());
  stages.reserve(batch.size());
  for (QueuedJob& queued : batch) {
    const InferenceJob& job = queued.job;
    const auto* tensor_input = std::get_if<InputTensor>(&job.input);
    const std::span<const float> values = tensor_input ? tensor_input->values : std::span<const float>(job.prepared);
    std::copy(values.begin(), values.end(), tensor.ptr() + running.size() * slot);
    running.push_back(&queued);
    stages.push_back({picked - queued.enqueued, job.prepare_time});
  }

  // One model run for the whole batch.
  const auto run_start = SteadyClock::now();
  Result<Inference> inference = Status::internal("not run");
  // The device can take the next batch once this one's first fabric segment is over (the
  // backend says so once, before infer returns; fp32: when the run ends).
  struct LeaveFabric final : BatchListener {
    InferenceQueue* queue;
    const ServedModel* model;
    bool left = false;
    LeaveFabric(InferenceQueue* q, const ServedModel* m) : queue(q), model(m) {}
    void device_free() override {
      if (left) return;
      left = true;
      queue->fabric_left(model);
    }
  } leave_fabric(this, &model);
  try {
    inference = model.engine->backend().infer(tensor, &leave_fabric);
  } catch (const std::exception& e) {
    inference = Status::internal(std::string("inference: ") + e.what());
  }
  leave_fabric.device_free();  // an exception skipped the backend's word
  const auto run_end = SteadyClock::now();
  if (inference && inference->scores.size() != running.size()) {
    inference = Status::internal("the model returned " + std::to_string(inference->scores.size()) +
                                 " results for a batch of " + std::to_string(running.size()));
  }
  if (!inference) {
    for (QueuedJob* queued : running) answer(queued->job, inference.status());
    return;
  }
  model.engine->backend().to_probabilities(inference->scores);
  for (StageDurations& s : stages) s.compute_infer = run_end - run_start;
  std::vector<ClassifyResult> results = build_results(model, running, *inference, stages);
  // The execution's statistics: gathering its inputs, its run, and the results built (before any answer).
  model.statistics->record_execution(running.size(),
                                     {{}, run_start - picked, run_end - run_start, SteadyClock::now() - run_end});
  for (size_t i = 0; i < running.size(); ++i) {
    results[i].timing.inference_us = micros_between(run_start, run_end);
    results[i].timing.total_us = micros_between(running[i]->job.received, SteadyClock::now());
    answer(running[i]->job, std::move(results[i]));
  }
}

std::vector<ClassifyResult> InferenceQueue::build_results(const ServedModel& model,
                                                          const std::vector<QueuedJob*>& running,
                                                          const Inference& inference,
                                                          const std::vector<StageDurations>& stages) {
  std::vector<ClassifyResult> results(running.size());
  for (size_t i = 0; i < running.size(); ++i) {
    const auto start = SteadyClock::now();
    ClassifyResult& result = results[i];
    result.classes = top_k_classes(inference.scores[i], running[i]->job.top_k, model.config().labels);
    result.probabilities = inference.scores[i];
    result.batch_size = static_cast<uint32_t>(running.size());
    result.device = inference.device;
    result.timing.queue_us = whole_micros(stages[i].queue);
    result.timing.decode_us = whole_micros(stages[i].compute_input);
    result.timing.fabric_us = inference.fabric_us;
    result.timing.host_us = inference.host_us;
    result.timing.modeled_fabric_us = inference.modeled_fabric_us;
    // The batch's modeled fabric energy, shared evenly by its images.
    result.energy_uj = inference.modeled_fabric_uj / static_cast<double>(running.size());
    result.stages = stages[i];
    result.stages.compute_output = SteadyClock::now() - start;
  }
  return results;
}

}  // namespace tessera
