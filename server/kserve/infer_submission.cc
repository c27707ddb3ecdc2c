#include "server/kserve/infer_submission.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "server/batching/in_flight.h"
#include "server/models/model_repository.h"
#include "server/models/model_statistics.h"

namespace tessera::kserve {
namespace {

// The answers of one request's jobs as they come, from the batcher's threads.
class BatchAnswers {
 public:
  BatchAnswers(std::string request_id, std::shared_ptr<const PendingInfer> pending, InferDone done,
               InFlightTracker* slot, SteadyClock::time_point received)
      : received_(received),
        request_id_(std::move(request_id)),
        pending_(std::move(pending)),
        done_(std::move(done)),
        slot_(slot),
        scores_(pending_->request.images.size()) {}

  // Image `index` answered; the last answer runs `done` and gives the slot back.
  void answer(size_t index, Result<ClassifyResult> result) {
    bool last = false;
    {
      std::lock_guard lock(mu_);
      if (result) {
        add_stages(result->stages);
        scores_[index] = std::move(result->probabilities);
      } else if (!error_ || index < error_index_) {
        error_ = result.status();
        error_index_ = index;
      }
      last = ++answered_ == scores_.size();
    }
    if (!last) return;
    record();
    done_(request_id_, error_ ? Result<ImageScores>(*error_) : Result<ImageScores>(std::move(scores_)));
    if (slot_ != nullptr) slot_->end();
  }

 private:
  // The request's stages from its images': the longest queue wait and model run (images of one
  // execution share it), the decode and output work of all of them.
  void add_stages(const StageDurations& image) {
    stages_.queue = std::max(stages_.queue, image.queue);
    stages_.compute_input += image.compute_input;
    stages_.compute_infer = std::max(stages_.compute_infer, image.compute_infer);
    stages_.compute_output += image.compute_output;
  }

  // The request counts once in its model version's statistics (its jobs record nothing).
  void record() const {
    ModelStatistics& statistics = *pending_->model.served->statistics;
    const auto elapsed = SteadyClock::now() - received_;
    if (error_) {
      statistics.record_failure(elapsed);
    } else {
      statistics.record_success(elapsed, stages_);
    }
  }

  const SteadyClock::time_point received_;
  const std::string request_id_;
  const std::shared_ptr<const PendingInfer> pending_;  // what the jobs' inputs point into
  const InferDone done_;
  InFlightTracker* const slot_;
  std::mutex mu_;
  ImageScores scores_;
  std::optional<Status> error_;
  size_t error_index_ = 0;
  size_t answered_ = 0;
  StageDurations stages_;
};

}  // namespace

InferSubmitted submit_infer(Admission& admission, AdmissionRequest base, std::shared_ptr<const PendingInfer> pending,
                            InferDone done) {
  const InferRequest& request = pending->request;
  if (request.images.empty()) {
    return {"", admission.refuse(base, Status::invalid_argument("inputs[0]: no image")).status()};
  }
  base.top_k = static_cast<uint64_t>(request.top_k());
  base.resolved = pending->model.served;  // runs on the version it was decoded against, which the answer names
  if (request.timeout_us > 0) {
    base.deadline = std::min(base.deadline, base.received + std::chrono::microseconds(request.timeout_us));
  }
  const bool takes_slot = base.takes_slot;
  base.takes_slot = false;
  base.records_statistics = false;  // the request counts once, when its last image answers
  std::vector<Admitted> jobs;
  jobs.reserve(request.images.size());
  for (const InferInput& image : request.images) {
    AdmissionRequest one = base;
    one.input = job_input(image);
    Admitted admitted = admission.admit(std::move(one));
    if (!admitted) {
      // Admission left the request's statistics to this door: one failure for the request.
      pending->model.served->statistics->record_failure(SteadyClock::now() - base.received);
      return {admitted.request_id(), admitted.status()};
    }
    base.request_id = admitted.request_id();  // one id for all the request's jobs
    jobs.push_back(std::move(admitted));
  }
  const std::string request_id = jobs.front().request_id();
  if (takes_slot && !admission.in_flight().try_begin()) {
    pending->model.served->statistics->record_failure(SteadyClock::now() - base.received);
    return {request_id, admission.refuse(base, Status::unavailable("the server is shutting down")).status()};
  }
  auto answers = std::make_shared<BatchAnswers>(request_id, std::move(pending), std::move(done),
                                                takes_slot ? &admission.in_flight() : nullptr, base.received);
  for (size_t i = 0; i < jobs.size(); ++i) {
    jobs[i]->done = [answers, i](Result<ClassifyResult> result) { answers->answer(i, std::move(result)); };
    jobs[i]->may_run_inline = jobs.size() == 1;  // several images go to the workers together
    admission.submit(std::move(jobs[i]));
  }
  return {request_id, Status::ok()};
}

}  // namespace tessera::kserve
