#include "server/batching/admission.h"

#include <utility>

#include "server/batching/inference_queue.h"
#include "server/batching/request_id.h"
#include "server/batching/request_log.h"
#include "server/models/model_repository.h"

namespace tessera {

void record_request(ModelStatistics& statistics, SteadyClock::time_point received,
                    const Result<ClassifyResult>& result) {
  const auto elapsed = SteadyClock::now() - received;
  if (result) {
    statistics.record_success(elapsed, result->stages);
  } else {
    statistics.record_failure(elapsed);
  }
}

Admitted::Admitted(std::string request_id, Result<InferenceJob> job, InFlightTracker* slot)
    : request_id_(std::move(request_id)), job_(std::move(job)), slot_(slot) {}

Admitted::Admitted(Admitted&& other) noexcept
    : request_id_(std::move(other.request_id_)),
      job_(std::move(other.job_)),
      slot_(std::exchange(other.slot_, nullptr)) {}

Admitted::~Admitted() {
  if (slot_ != nullptr) slot_->end();
}

Admission::Admission(const ModelRepository& models, InferenceQueue& queue, InFlightTracker& in_flight,
                     int64_t max_image_bytes)
    : models_(models), queue_(queue), in_flight_(in_flight), max_image_bytes_(max_image_bytes) {}

Admitted Admission::admit(AdmissionRequest request) {
  std::string request_id;
  if (Status id = resolve_request_id(request, request_id); !id.is_ok()) {
    return refused(request, std::move(request_id), request.model, std::move(id));
  }
  std::shared_ptr<const ServedModel> model = std::move(request.resolved);
  if (!model) {
    auto found = models_.resolve(request.model, request.version);
    if (!found) return refused(request, std::move(request_id), request.model, found.status());
    model = std::move(found).value();
  }
  // From here on the log names the model the request would go to, and a refusal counts there.
  auto refuse_now = [&](Status status) {
    return refused(request, std::move(request_id), model->name(), std::move(status), model.get());
  };
  if (!request.top_k) return refuse_now(request.top_k.status());
  if (!request.input) return refuse_now(request.input.status());
  if (Status input = check_input(request, *request.input); !input.is_ok()) return refuse_now(std::move(input));
  if (request.takes_slot && !in_flight_.try_begin()) {
    return refuse_now(Status::unavailable("the server is shutting down"));
  }
  InferenceJob job;
  job.input = *request.input;
  job.top_k = effective_top_k(*request.top_k, model->num_classes());
  job.request_id = request_id;
  job.via = request.via;
  job.received = request.received;
  job.deadline = request.deadline;
  job.cancelled = std::move(request.cancelled);
  job.records_statistics = request.records_statistics;
  job.model = std::move(model);
  return Admitted(std::move(request_id), std::move(job), request.takes_slot ? &in_flight_ : nullptr);
}

Admitted Admission::refuse(const AdmissionRequest& request, Status status) {
  std::string request_id;
  if (Status id = resolve_request_id(request, request_id); !id.is_ok()) status = std::move(id);
  // A request the door refuses for its form counts against the model version it names, if served.
  std::shared_ptr<const ServedModel> served = request.resolved;
  if (!served && request.records_statistics) served = models_.find(request.model, request.version);
  return refused(request, std::move(request_id), request.model, std::move(status), served.get());
}

uint64_t Admission::submit(Admitted admitted) {
  InferenceJob job = std::move(admitted.job_).value();
  InFlightTracker* slot = std::exchange(admitted.slot_, nullptr);
  ModelStatistics* statistics = job.records_statistics && job.model ? job.model->statistics.get() : nullptr;
  if (slot != nullptr || statistics != nullptr) {
    // The job owns this callback and its model version, so `statistics` outlives it.
    job.done = [slot, statistics, received = job.received, done = std::move(job.done)](Result<ClassifyResult> result) {
      if (statistics != nullptr) record_request(*statistics, received, result);
      done(std::move(result));
      if (slot != nullptr) slot->end();
    };
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

Status Admission::check_input(const AdmissionRequest& request, const JobInput& input) const {
  const auto* image = std::get_if<EncodedImage>(&input);
  if (image == nullptr) return Status::ok();  // tensors were checked against the model by their decoder
  const size_t size = image->bytes.size();
  if (size == 0) return Status::invalid_argument(std::string(request.input_name) + " is empty");
  if (static_cast<int64_t>(size) > max_image_bytes_) {
    return Status::invalid_argument(std::string(request.input_name) + " is " + std::to_string(size) +
                                    " bytes; the limit is " + std::to_string(max_image_bytes_));
  }
  return Status::ok();
}

Admitted Admission::refused(const AdmissionRequest& request, std::string request_id, std::string_view model,
                            Status status, const ServedModel* served) const {
  log_request_failed(request.via, request_id, model, request.bytes, status);
  if (served != nullptr && request.records_statistics) {
    served->statistics->record_failure(SteadyClock::now() - request.received);
  }
  return Admitted(std::move(request_id), std::move(status));
}

}  // namespace tessera
