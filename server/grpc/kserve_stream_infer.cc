#include "server/grpc/kserve_stream_infer.h"

#include <string>
#include <utility>

#include "server/batching/admission.h"
#include "server/batching/inference_queue.h"
#include "server/grpc/classify_stream.h"
#include "server/grpc/status_mapping.h"
#include "server/grpc/tsan_handoff.h"
#include "server/kserve/decode_grpc.h"
#include "server/kserve/infer_response.h"
#include "server/kserve/infer_submission.h"

namespace tessera::kserve {
namespace {

constexpr const char* kVia = "kserve-grpc-stream";

// The answer to a request that failed: its id and model, and the error as Triton words it.
inference::ModelStreamInferResponse error_answer(const inference::ModelInferRequest& request, const Status& status) {
  inference::ModelStreamInferResponse answer;
  answer.set_error_message(to_grpc_status(status).error_message());
  auto* response = answer.mutable_infer_response();
  response->set_id(request.id());
  response->set_model_name(request.model_name());
  response->set_model_version(request.model_version());
  return answer;
}

}  // namespace

StreamInferReactor::StreamInferReactor(ModelRepository& models, Admission& admission, const SharedMemoryRegistry* shm,
                                       grpc::CallbackServerContext* context)
    : models_(models), admission_(admission), shm_(shm), context_(context) {
  holds_slot_ = admission.in_flight().try_begin();
  if (!holds_slot_) {
    finished_ = true;
    handed_to_grpc(this);
    Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down"));
    return;
  }
  step(std::unique_lock(mu_));
}

void StreamInferReactor::OnReadDone(bool ok) {
  back_from_grpc(this);
  inference::ModelInferRequest request;
  {
    std::lock_guard lock(mu_);
    read_in_flight_ = false;
    if (!ok) {
      reads_done_ = true;  // the client half-closed (or the call broke)
    } else {
      request.Swap(&reading_);
    }
  }
  if (ok) submit(request);
  step(std::unique_lock(mu_));
}

void StreamInferReactor::submit(const inference::ModelInferRequest& request) {
  AdmissionRequest admission;
  admission.via = kVia;
  admission.model = request.model_name();
  admission.version = request.model_version();
  admission.request_id = request.id();
  admission.id_rule = RequestIdRule::kReplace;
  admission.bytes = request.ByteSizeLong();
  admission.deadline = steady_deadline(context_->deadline());
  admission.cancelled = [context = context_] { return context->IsCancelled(); };
  admission.takes_slot = false;  // the stream holds one

  auto model = find_model(models_, request.model_name(), request.model_version());
  if (!model) return add_answer(error_answer(request, admission_.refuse(admission, model.status()).status()), false);
  auto pending = std::make_shared<PendingInfer>();
  pending->shm.registry = shm_;
  auto decoded =
      decode_infer_request(request, model->signature, admission_.queue().options().decode_limits, &pending->shm);
  if (!decoded)
    return add_answer(error_answer(request, admission_.refuse(admission, decoded.status()).status()), false);
  pending->request = std::move(decoded).value();
  pending->model = std::move(model).value();
  {
    std::lock_guard lock(mu_);
    ++pending_;
  }
  auto done = [this, pending, request_template = error_answer(request, Status::ok())](const std::string& /*request_id*/,
                                                                                      Result<ImageScores> scores) {
    inference::ModelStreamInferResponse answer;
    Status status = scores.status();
    if (scores) status = write_shm_outputs(pending->shm, *scores);  // outputs into their regions first
    if (status.is_ok()) {
      *answer.mutable_infer_response() = make_infer_response(pending->request, pending->model.signature, *scores);
    } else {
      answer = request_template;
      answer.set_error_message(to_grpc_status(status).error_message());
    }
    add_answer(std::move(answer), true);
  };
  const InferSubmitted submitted = submit_infer(admission_, std::move(admission), pending, std::move(done));
  if (!submitted.status.is_ok()) add_answer(error_answer(request, submitted.status), true);
}

void StreamInferReactor::add_answer(inference::ModelStreamInferResponse answer, bool was_pending) {
  std::unique_lock lock(mu_);
  if (was_pending) --pending_;
  if (!broken_) answers_.push_back(std::move(answer));
  // From submit() the caller steps after; from the batcher's thread this is the only step, taken
  // under the same lock: once it is released the reactor may finish and be deleted.
  if (was_pending) step(std::move(lock));
}

void StreamInferReactor::OnWriteDone(bool ok) {
  back_from_grpc(this);
  std::unique_lock lock(mu_);
  write_in_flight_ = false;
  if (!ok) {  // the client is gone
    broken_ = true;
    reads_done_ = true;
    answers_.clear();
  }
  step(std::move(lock));
}

void StreamInferReactor::OnCancel() {
  back_from_grpc(this);
  std::unique_lock lock(mu_);
  broken_ = true;
  reads_done_ = true;
  answers_.clear();
  step(std::move(lock));
}

void StreamInferReactor::OnDone() {
  back_from_grpc(this);
  if (holds_slot_) admission_.in_flight().end();
  delete this;
}

void StreamInferReactor::step(std::unique_lock<std::mutex> lock) {
  // Decide under the lock, act after it: gRPC may run reactions on other threads at once.
  bool write = false, read = false, finish = false, cancelled = false;
  {
    const std::unique_lock held = std::move(lock);
    if (finished_) return;
    if (!write_in_flight_ && !answers_.empty()) {
      writing_ = std::move(answers_.front());
      answers_.pop_front();
      write_in_flight_ = write = true;
    }
    // Unsent answers count with the requests in the batcher: a client that does not read stops
    // the reading here, and its own writes then stall on flow control.
    if (!read_in_flight_ && !reads_done_ && pending_ + answers_.size() < kMaxPendingPerStream) {
      reading_.Clear();
      read_in_flight_ = read = true;
    }
    if (reads_done_ && pending_ == 0 && !read_in_flight_ && !write_in_flight_ && answers_.empty()) {
      finished_ = finish = true;
      cancelled = broken_;
    }
  }
  // A started write may be done (on another thread) before the read starts: each start is its own
  // hand-over, with nothing of this reactor read after it.
  if (write) {
    handed_to_grpc(this);
    StartWrite(&writing_);
  }
  if (read) {
    handed_to_grpc(this);
    StartRead(&reading_);
  }
  if (finish) {
    grpc::Status status =
        cancelled ? grpc::Status(grpc::StatusCode::CANCELLED, "the stream was cancelled") : grpc::Status::OK;
    handed_to_grpc(this);
    Finish(std::move(status));
  }
}

}  // namespace tessera::kserve
