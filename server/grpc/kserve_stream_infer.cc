#include "server/grpc/kserve_stream_infer.h"

#include <string>
#include <utility>

#include "server/batching/admission.h"
#include "server/batching/inference_queue.h"
#include "server/grpc/status_mapping.h"
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
    : PacedStream(admission.in_flight()), models_(models), admission_(admission), shm_(shm), context_(context) {
  start();
}

void StreamInferReactor::submit(inference::ModelInferRequest request) {
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
  if (!model) return answered(error_answer(request, admission_.refuse(admission, model.status()).status()), false);
  auto pending = std::make_shared<PendingInfer>();
  pending->shm.registry = shm_;
  auto decoded =
      decode_infer_request(request, model->signature, admission_.queue().options().decode_limits, &pending->shm);
  if (!decoded) return answered(error_answer(request, admission_.refuse(admission, decoded.status()).status()), false);
  pending->request = std::move(decoded).value();
  pending->model = std::move(model).value();
  expect_answer();
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
    answered(std::move(answer), true);
  };
  const InferSubmitted submitted = submit_infer(admission_, std::move(admission), pending, std::move(done));
  if (!submitted.status.is_ok()) answered(error_answer(request, submitted.status), true);
}

}  // namespace tessera::kserve
