#include "server/grpc/classify_stream.h"

#include <utility>

#include "server/batching/admission.h"
#include "server/grpc/classify_messages.h"
#include "server/grpc/status_mapping.h"
#include "server/grpc/tsan_handoff.h"
#include "server/models/model_repository.h"

namespace tessera {
namespace {

// The per-request error answer of a stream.
v1::ClassifyResponse error_answer(const std::string& model, const std::string& request_id, const Status& status) {
  v1::ClassifyResponse r;
  r.set_model(model);
  r.set_request_id(request_id);
  const grpc::Status g = to_grpc_status(status);
  r.set_error(g.error_message());
  r.set_error_code(static_cast<uint32_t>(g.error_code()));
  return r;
}

}  // namespace

ClassifyStreamReactor::ClassifyStreamReactor(Admission& admission, grpc::CallbackServerContext* context)
    : admission_(admission), context_(context) {
  holds_slot_ = admission.in_flight().try_begin();
  if (!holds_slot_) {
    finished_ = true;
    handed_to_grpc(this);
    Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down"));
    return;
  }
  step();
}

void ClassifyStreamReactor::OnReadDone(bool ok) {
  back_from_grpc(this);
  std::unique_ptr<v1::ClassifyRequest> request;
  {
    std::lock_guard lock(mu_);
    read_in_flight_ = false;
    if (!ok) {
      reads_done_ = true;  // the client half-closed (or the call broke)
    } else {
      request = std::move(reading_);
    }
  }
  if (request) submit(std::move(request));
  step();
}

void ClassifyStreamReactor::submit(std::unique_ptr<v1::ClassifyRequest> request) {
  AdmissionRequest admission = admission_request(context_, *request, "grpc-stream");
  admission.takes_slot = false;
  Admitted admitted = admission_.admit(std::move(admission));
  if (!admitted) {
    std::lock_guard lock(mu_);
    if (!broken_) answers_.push_back(error_answer(request->model(), admitted.request_id(), admitted.status()));
    return;
  }
  std::list<std::unique_ptr<v1::ClassifyRequest>>::iterator kept;
  {
    std::lock_guard lock(mu_);
    requests_.push_back(std::move(request));
    kept = std::prev(requests_.end());
    ++pending_;
  }
  // The answer names the version admission chose, the one the job holds and runs on.
  admitted->done = [this, kept, request_id = admitted.request_id(), model = admitted->model->name(),
                    version = admitted->model->version](Result<ClassifyResult> result) {
    v1::ClassifyResponse r;
    if (result) {
      r.set_model(model);
      r.set_request_id(request_id);
      fill_response(*result, r);
    } else {
      r = error_answer(model, request_id, result.status());
    }
    r.set_model_version(version);
    {
      std::lock_guard lock(mu_);
      requests_.erase(kept);
      --pending_;
      if (!broken_) answers_.push_back(std::move(r));
    }
    step();
  };
  admission_.submit(std::move(admitted));
}

void ClassifyStreamReactor::OnWriteDone(bool ok) {
  back_from_grpc(this);
  {
    std::lock_guard lock(mu_);
    write_in_flight_ = false;
    if (!ok) {  // the client is gone
      broken_ = true;
      reads_done_ = true;
      answers_.clear();
    }
  }
  step();
}

void ClassifyStreamReactor::OnCancel() {
  back_from_grpc(this);
  {
    std::lock_guard lock(mu_);
    broken_ = true;
    reads_done_ = true;
    answers_.clear();
  }
  step();
}

void ClassifyStreamReactor::OnDone() {
  back_from_grpc(this);
  if (holds_slot_) admission_.in_flight().end();
  delete this;
}

void ClassifyStreamReactor::step() {
  // Decide under the lock, act after it: gRPC may run reactions on other threads at once.
  bool write = false, finish = false, cancelled = false;
  v1::ClassifyRequest* read_into = nullptr;
  {
    std::lock_guard lock(mu_);
    if (finished_) return;
    if (!write_in_flight_ && !answers_.empty()) {
      writing_ = std::move(answers_.front());
      answers_.pop_front();
      write_in_flight_ = write = true;
    }
    // Unsent answers count with the requests in the batcher: a client that does not read stops
    // the reading here, and its own writes then stall on flow control.
    if (!read_in_flight_ && !reads_done_ && pending_ + answers_.size() < kMaxPendingPerStream) {
      reading_ = std::make_unique<v1::ClassifyRequest>();
      read_into = reading_.get();
      read_in_flight_ = true;
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
  if (read_into != nullptr) {
    handed_to_grpc(this);
    StartRead(read_into);
  }
  if (finish) {
    grpc::Status status =
        cancelled ? grpc::Status(grpc::StatusCode::CANCELLED, "the stream was cancelled") : grpc::Status::OK;
    handed_to_grpc(this);
    Finish(std::move(status));
  }
}

}  // namespace tessera
