#include "server/inference_queue.h"

#include <spdlog/spdlog.h>

#include <exception>
#include <utility>

#include "accel/image/preprocess.h"
#include "server/model_repository.h"
#include "server/request_log.h"

namespace tessera {
namespace {

// Logs the outcome and calls the job back; a throwing callback is logged, not propagated.
void answer(InferenceJob& job, Result<ClassifyResult> result) {
  const std::string& model = job.model ? job.model->name() : std::string();
  if (result) {
    log_request_done(job.via, job.request_id, model, job.image.size(), *result);
  } else {
    log_request_failed(job.via, job.request_id, model, job.image.size(), result.status());
  }
  try {
    job.done(std::move(result));
  } catch (const std::exception& e) {
    spdlog::error("{} {}: completion callback threw: {}", job.via, job.request_id, e.what());
  }
}

}  // namespace

InferenceQueue::InferenceQueue(InferenceQueueOptions options) : options_(std::move(options)) {
  const int n = options_.workers > 0 ? options_.workers : 1;
  workers_.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) workers_.emplace_back([this] { worker_loop(); });
}

InferenceQueue::~InferenceQueue() { stop(); }

void InferenceQueue::submit(InferenceJob job) {
  Status refused;
  {
    std::lock_guard lock(mu_);
    if (stopping_) {
      refused = Status::unavailable("the server is shutting down");
    } else if (jobs_.size() >= options_.capacity) {
      refused = Status::resource_exhausted("the inference queue is full (" +
                                           std::to_string(options_.capacity) + " jobs); retry later");
    } else {
      jobs_.push_back({std::move(job), SteadyClock::now()});
    }
  }
  if (!refused.is_ok()) {
    answer(job, std::move(refused));
    return;
  }
  cv_.notify_one();
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
  return jobs_.size();
}

void InferenceQueue::worker_loop() {
  for (;;) {
    std::vector<QueuedJob> batch = take_batch();
    if (batch.empty()) return;
    run_batch(std::move(batch));
  }
}

std::vector<InferenceQueue::QueuedJob> InferenceQueue::take_batch() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
  std::vector<QueuedJob> batch;
  if (jobs_.empty()) return batch;  // stopping and drained
  batch.push_back(std::move(jobs_.front()));
  jobs_.pop_front();
  return batch;
}

void InferenceQueue::run_batch(std::vector<QueuedJob> batch) {
  const auto picked = SteadyClock::now();
  const ServedModel& model = *batch.front().job.model;
  const PreprocessConfig& input = model.config().input;
  const size_t slot = static_cast<size_t>(input.channels) * static_cast<size_t>(input.height) *
                      static_cast<size_t>(input.width);

  // Decode + preprocess each job into the next free slot; failed jobs are answered here.
  Tensor tensor({static_cast<int64_t>(batch.size()), input.channels, input.height, input.width});
  std::vector<QueuedJob*> running;
  std::vector<Timing> timings;
  for (QueuedJob& queued : batch) {
    InferenceJob& job = queued.job;
    Timing timing;
    timing.queue_us = micros_between(queued.enqueued, picked);
    const auto start = SteadyClock::now();
    if (start >= job.deadline) {
      answer(job, Status::deadline_exceeded("the deadline passed while the request was queued"));
      continue;
    }
    if (job.cancelled && job.cancelled()) {
      answer(job, Status::cancelled("the caller cancelled the request"));
      continue;
    }
    Status status;
    try {
      auto image = decode_image(job.image, input.channels, options_.decode_limits);
      status = image ? preprocess_into(*image, input, tensor.ptr() + running.size() * slot)
                     : image.status();
    } catch (const std::exception& e) {
      status = Status::internal(std::string("decode: ") + e.what());
    }
    if (!status.is_ok()) {
      answer(job, std::move(status));
      continue;
    }
    timing.decode_us = micros_between(start, SteadyClock::now());
    running.push_back(&queued);
    timings.push_back(timing);
  }
  if (running.empty()) return;
  tensor.shape[0] = static_cast<int64_t>(running.size());
  tensor.data.resize(running.size() * slot);

  // One model run for the whole batch.
  const auto run_start = SteadyClock::now();
  Result<Inference> inference = Status::internal("not run");
  try {
    inference = model.engine->infer(tensor);
  } catch (const std::exception& e) {
    inference = Status::internal(std::string("inference: ") + e.what());
  }
  const auto run_end = SteadyClock::now();
  if (inference && inference->scores.size() != running.size()) {
    inference = Status::internal("the model returned " + std::to_string(inference->scores.size()) +
                                 " results for a batch of " + std::to_string(running.size()));
  }
  if (inference) model.engine->to_probabilities(inference->scores);

  for (size_t i = 0; i < running.size(); ++i) {
    InferenceJob& job = running[i]->job;
    if (!inference) {
      answer(job, inference.status());
      continue;
    }
    ClassifyResult result;
    result.classes = top_k_classes(inference->scores[i], job.top_k, model.config().labels);
    result.timing = timings[i];
    result.timing.inference_us = micros_between(run_start, run_end);
    result.timing.fabric_us = inference->fabric_us;
    result.timing.host_us = inference->host_us;
    result.timing.modeled_fabric_us = inference->modeled_fabric_us;
    result.timing.total_us = micros_between(job.received, SteadyClock::now());
    answer(job, std::move(result));
  }
}

}  // namespace tessera
