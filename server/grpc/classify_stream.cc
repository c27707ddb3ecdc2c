#include "server/grpc/classify_stream.h"

#include <memory>
#include <utility>

#include "server/batching/admission.h"
#include "server/grpc/classify_messages.h"
#include "server/grpc/status_mapping.h"
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
    : PacedStream(admission.in_flight()), admission_(admission), context_(context) {
  start();
}

void ClassifyStreamReactor::submit(v1::ClassifyRequest request) {
  // The job's input points into the request: its `done` keeps it until the answer.
  auto kept = std::make_shared<const v1::ClassifyRequest>(std::move(request));
  AdmissionRequest admission = admission_request(context_, *kept, "grpc-stream");
  admission.takes_slot = false;
  Admitted admitted = admission_.admit(std::move(admission));
  if (!admitted) return answered(error_answer(kept->model(), admitted.request_id(), admitted.status()), false);
  expect_answer();
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
    answered(std::move(r), true);
  };
  admission_.submit(std::move(admitted));
}

}  // namespace tessera
