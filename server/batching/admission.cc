#include "server/batching/admission.h"

#include <algorithm>
#include <mutex>
#include <optional>
#include <utility>

#include "server/batching/inference_queue.h"
#include "server/batching/request_id.h"
#include "server/batching/request_log.h"
#include "server/models/model_repository.h"

namespace tessera {
namespace {

// Records one request in its model version's statistics: a success with its stages, or a failure;
// both with the time since the door `received` it.
void record_request(ModelStatistics& statistics, SteadyClock::time_point received,
                    const std::optional<StageDurations>& success) {
  const auto elapsed = SteadyClock::now() - received;
  if (success) {
    statistics.record_success(elapsed, *success);
  } else {
    statistics.record_failure(elapsed);
  }
}

// The answers of one group's jobs as they come, from the batcher's threads.
class GroupAnswers {
 public:
  GroupAnswers(size_t size, GroupDone done, ModelStatistics* statistics, InFlightTracker* slot,
               SteadyClock::time_point received)
      : received_(received), done_(std::move(done)), statistics_(statistics), slot_(slot), results_(size) {}

  // Image `index` answered; the last answer records the request, runs `done` and gives the slot back.
  void answer(size_t index, Result<ClassifyResult> result) {
    bool last = false;
    {
      std::lock_guard lock(mu_);
      if (result) {
        add_stages(result->stages);
        results_[index] = std::move(result).value();
      } else if (!error_ || index < error_index_) {
        error_ = result.status();
        error_index_ = index;
      }
      last = ++answered_ == results_.size();
    }
    if (!last) return;
    if (statistics_ != nullptr) record_request(*statistics_, received_, error_ ? std::nullopt : std::optional(stages_));
    done_(error_ ? Result<std::vector<ClassifyResult>>(*error_)
                 : Result<std::vector<ClassifyResult>>(std::move(results_)));
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

  const SteadyClock::time_point received_;
  const GroupDone done_;
  ModelStatistics* const statistics_;  // the version's, which the jobs keep alive
  InFlightTracker* const slot_;
  std::mutex mu_;
  std::vector<ClassifyResult> results_;
  std::optional<Status> error_;
  size_t error_index_ = 0;
  size_t answered_ = 0;
  StageDurations stages_;
};

}  // namespace

Admitted::Admitted(std::string request_id, Result<InferenceJob> job, InFlightTracker* slot)
    : request_id_(std::move(request_id)), job_(std::move(job)), slot_(slot) {}

Admitted::Admitted(Admitted&& other) noexcept
    : request_id_(std::move(other.request_id_)),
      job_(std::move(other.job_)),
      slot_(std::exchange(other.slot_, nullptr)) {}

Admitted::~Admitted() {
  if (slot_ != nullptr) slot_->end();
}

AdmittedGroup::AdmittedGroup(std::string request_id, Status status, std::vector<InferenceJob> jobs,
                             InFlightTracker* slot)
    : request_id_(std::move(request_id)), status_(std::move(status)), jobs_(std::move(jobs)), slot_(slot) {}

AdmittedGroup::AdmittedGroup(AdmittedGroup&& other) noexcept
    : request_id_(std::move(other.request_id_)),
      status_(std::move(other.status_)),
      jobs_(std::move(other.jobs_)),
      slot_(std::exchange(other.slot_, nullptr)) {}

AdmittedGroup::~AdmittedGroup() {
  if (slot_ != nullptr) slot_->end();
}

Admission::Admission(const ModelRepository& models, InferenceQueue& queue, InFlightTracker& in_flight,
                     DecodeLimits limits)
    : models_(models), queue_(queue), in_flight_(in_flight), input_(limits) {}

Result<std::vector<InferenceJob>> Admission::admit_inputs(AdmissionRequest& request,
                                                          Result<std::vector<JobInput>> inputs, std::string& request_id,
                                                          InFlightTracker*& slot) {
  slot = nullptr;
  if (Status id = resolve_request_id(request, request_id); !id.is_ok()) {
    return refused(request, request_id, request.model, std::move(id));
  }
  std::shared_ptr<const ServedModel> model = std::move(request.resolved);
  if (!model) {
    auto found = models_.resolve(request.model, request.version);
    if (!found) return refused(request, request_id, request.model, found.status());
    model = std::move(found).value();
  }
  // From here on the log names the model the request would go to, and a refusal counts there.
  auto refuse_now = [&](Status status) {
    return refused(request, request_id, model->name(), std::move(status), model.get());
  };
  if (!request.top_k) return refuse_now(request.top_k.status());
  if (!inputs) return refuse_now(inputs.status());
  if (inputs->empty()) return refuse_now(Status::invalid_argument(std::string(request.input_name) + ": no image"));
  for (const JobInput& input : *inputs) {
    if (Status size = input_.check_size(input, request.input_name); !size.is_ok()) return refuse_now(std::move(size));
  }
  if (request.takes_slot && !in_flight_.try_begin()) {
    return refuse_now(Status::unavailable("the server is shutting down"));
  }
  if (request.takes_slot) slot = &in_flight_;
  std::vector<InferenceJob> jobs(inputs->size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    InferenceJob& job = jobs[i];
    job.input = (*inputs)[i];
    job.top_k = effective_top_k(*request.top_k, model->num_classes());
    job.request_id = request_id;
    job.via = request.via;
    job.received = request.received;
    job.deadline = request.deadline;
    job.cancelled = request.cancelled;
    job.model = model;
  }
  return jobs;
}

Admitted Admission::admit(AdmissionRequest request) {
  std::string request_id;
  InFlightTracker* slot = nullptr;
  Result<std::vector<JobInput>> inputs = request.input ? Result<std::vector<JobInput>>(std::vector{*request.input})
                                                       : Result<std::vector<JobInput>>(request.input.status());
  auto jobs = admit_inputs(request, std::move(inputs), request_id, slot);
  if (!jobs) return Admitted(std::move(request_id), jobs.status());
  return Admitted(std::move(request_id), std::move(jobs->front()), slot);
}

AdmittedGroup Admission::admit_group(AdmissionRequest request, std::vector<JobInput> inputs) {
  std::string request_id;
  InFlightTracker* slot = nullptr;
  auto jobs = admit_inputs(request, std::move(inputs), request_id, slot);
  if (!jobs) return AdmittedGroup(std::move(request_id), jobs.status());
  return AdmittedGroup(std::move(request_id), Status::ok(), std::move(jobs).value(), slot);
}

Admitted Admission::refuse(const AdmissionRequest& request, Status status) {
  std::string request_id;
  if (Status id = resolve_request_id(request, request_id); !id.is_ok()) status = std::move(id);
  // A request the door refuses for its form counts against the model version it names, if served.
  std::shared_ptr<const ServedModel> served = request.resolved;
  if (!served) served = models_.find(request.model, request.version);
  Status why = refused(request, request_id, request.model, std::move(status), served.get());
  return Admitted(std::move(request_id), std::move(why));
}

uint64_t Admission::submit(Admitted admitted) {
  InferenceJob job = std::move(admitted.job_).value();
  InFlightTracker* slot = std::exchange(admitted.slot_, nullptr);
  // The job owns this callback and its model version, so `statistics` outlives it.
  ModelStatistics* statistics = job.model->statistics.get();
  job.done = [slot, statistics, received = job.received, done = std::move(job.done)](Result<ClassifyResult> result) {
    record_request(*statistics, received, result ? std::optional(result->stages) : std::nullopt);
    done(std::move(result));
    if (slot != nullptr) slot->end();
  };
  return enqueue(std::move(job));
}

void Admission::submit_group(AdmittedGroup group, GroupDone done) {
  std::vector<InferenceJob> jobs = std::move(group.jobs_);
  InFlightTracker* slot = std::exchange(group.slot_, nullptr);
  auto answers = std::make_shared<GroupAnswers>(jobs.size(), std::move(done), jobs.front().model->statistics.get(),
                                                slot, jobs.front().received);
  const bool alone = jobs.size() == 1;
  for (size_t i = 0; i < jobs.size(); ++i) {
    jobs[i].done = [answers, i](Result<ClassifyResult> result) { answers->answer(i, std::move(result)); };
    jobs[i].may_run_inline = alone;  // several images go to the workers together
    enqueue(std::move(jobs[i]));
  }
}

uint64_t Admission::enqueue(InferenceJob job) {
  // A job the queue would refuse is refused before its decode is paid for; the queue checks again.
  Status why = queue_.accepts(job);
  if (why.is_ok()) why = input_.prepare(job);
  if (!why.is_ok()) {
    queue_.answer_unqueued(std::move(job), std::move(why));
    return 0;
  }
  return queue_.submit(std::move(job));
}

Status Admission::resolve_request_id(const AdmissionRequest& request, std::string& request_id) const {
  if (is_valid_request_id(request.request_id)) {
    request_id = request.request_id;
    return Status::ok();
  }
  // No id, or one that is not usable: the logs get one of ours.
  request_id = make_request_id();
  if (request.request_id.empty() || request.id_rule == RequestIdRule::kReplace) return Status::ok();
  return Status::invalid_argument(std::string(request.id_name) + " must be 1..128 printable characters without spaces");
}

Status Admission::refused(const AdmissionRequest& request, const std::string& request_id, std::string_view model,
                          Status status, const ServedModel* served) const {
  log_request_failed(request.via, request_id, model, request.bytes, status);
  if (served != nullptr) served->statistics->record_failure(SteadyClock::now() - request.received);
  return status;
}

}  // namespace tessera
