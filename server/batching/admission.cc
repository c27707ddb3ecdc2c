#include "server/batching/admission.h"

#include <utility>

#include "server/batching/inference_queue.h"
#include "server/batching/request_id.h"
#include "server/batching/request_log.h"
#include "server/models/model_repository.h"

namespace tessera {

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
  // From here on the log names the model the request would go to.
  if (!request.top_k) return refused(request, std::move(request_id), model->name(), request.top_k.status());
  if (!request.input) return refused(request, std::move(request_id), model->name(), request.input.status());
  if (Status input = check_input(request, *request.input); !input.is_ok()) {
    return refused(request, std::move(request_id), model->name(), std::move(input));
  }
  if (request.takes_slot && !in_flight_.try_begin()) {
    return refused(request, std::move(request_id), model->name(), Status::unavailable("the server is shutting down"));
  }
  InferenceJob job;
  job.input = *request.input;
  job.top_k = effective_top_k(*request.top_k, model->num_classes());
  job.request_id = request_id;
  job.via = request.via;
  job.received = request.received;
  job.deadline = request.deadline;
  job.cancelled = std::move(request.cancelled);
  job.model = std::move(model);
  return Admitted(std::move(request_id), std::move(job), request.takes_slot ? &in_flight_ : nullptr);
}

Admitted Admission::refuse(const AdmissionRequest& request, Status status) {
  std::string request_id;
  if (Status id = resolve_request_id(request, request_id); !id.is_ok()) status = std::move(id);
  return refused(request, std::move(request_id), request.model, std::move(status));
}

uint64_t Admission::submit(Admitted admitted) {
  InferenceJob job = std::move(admitted.job_).value();
  if (InFlightTracker* slot = std::exchange(admitted.slot_, nullptr)) {
    job.done = [slot, done = std::move(job.done)](Result<ClassifyResult> result) {
      done(std::move(result));
      slot->end();
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
                            Status status) const {
  log_request_failed(request.via, request_id, model, request.bytes, status);
  return Admitted(std::move(request_id), std::move(status));
}

}  // namespace tessera
