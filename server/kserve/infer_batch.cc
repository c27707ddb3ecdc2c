#include "server/kserve/infer_batch.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "server/batching/in_flight.h"

namespace tessera::kserve {
namespace {

// The answers of one request's jobs as they come, from the batcher's threads.
class BatchAnswers {
 public:
  BatchAnswers(std::string request_id, std::shared_ptr<const PendingInfer> pending, InferDone done,
               InFlightTracker* slot)
      : request_id_(std::move(request_id)),
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
        scores_[index] = std::move(result->probabilities);
      } else if (!error_ || index < error_index_) {
        error_ = result.status();
        error_index_ = index;
      }
      last = ++answered_ == scores_.size();
    }
    if (!last) return;
    done_(request_id_, error_ ? Result<ImageScores>(*error_) : Result<ImageScores>(std::move(scores_)));
    if (slot_ != nullptr) slot_->end();
  }

 private:
  const std::string request_id_;
  const std::shared_ptr<const PendingInfer> pending_;  // what the jobs' inputs point into
  const InferDone done_;
  InFlightTracker* const slot_;
  std::mutex mu_;
  ImageScores scores_;
  std::optional<Status> error_;
  size_t error_index_ = 0;
  size_t answered_ = 0;
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
  std::vector<Admitted> jobs;
  jobs.reserve(request.images.size());
  for (const InferInput& image : request.images) {
    AdmissionRequest one = base;
    one.input = job_input(image);
    Admitted admitted = admission.admit(std::move(one));
    if (!admitted) return {admitted.request_id(), admitted.status()};
    base.request_id = admitted.request_id();  // one id for all the request's jobs
    jobs.push_back(std::move(admitted));
  }
  const std::string request_id = jobs.front().request_id();
  if (takes_slot && !admission.in_flight().try_begin()) {
    return {request_id, admission.refuse(base, Status::unavailable("the server is shutting down")).status()};
  }
  auto answers = std::make_shared<BatchAnswers>(request_id, std::move(pending), std::move(done),
                                                takes_slot ? &admission.in_flight() : nullptr);
  for (size_t i = 0; i < jobs.size(); ++i) {
    jobs[i]->done = [answers, i](Result<ClassifyResult> result) { answers->answer(i, std::move(result)); };
    admission.submit(std::move(jobs[i]));
  }
  return {request_id, Status::ok()};
}

}  // namespace tessera::kserve
