#include "server/grpc/kserve_stream_infer.h"

#include <string>
#include <utility>

#include "server/batching/admission.h"
#include "server/batching/inference_queue.h"
#include "server/grpc/status_mapping.h"
#include "server/kserve/decode_grpc.h"
#include "server/kserve/infer_response.h"
#include "server/kserve/model_infer.h"

namespace tessera {

using kserve::decode_infer_request;
using kserve::ImageScores;
using kserve::InferSubmitted;
using kserve::make_infer_response;
using kserve::model_infer;
using kserve::ModelInferCall;
using kserve::ModelSignature;
using kserve::PendingInfer;
using kserve::SharedMemoryRegistry;
using kserve::ShmRequest;

namespace {

constexpr const char* kStreamVia = "kserve-grpc-stream";

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
  admission.via = kStreamVia;
  admission.model = request.model_name();
  admission.version = request.model_version();
  admission.request_id = request.id();
  admission.id_rule = RequestIdRule::kReplace;
  admission.bytes = request.ByteSizeLong();
  admission.deadline = steady_deadline(context_->deadline());
  admission.cancelled = [context = context_] { return context->IsCancelled(); };
  admission.takes_slot = false;  // the stream holds one

  expect_answer();  // every outcome is answered through answered(..., true)
  auto decode = [&request](const ModelSignature& model, const DecodeLimits& limits, ShmRequest* shm) {
    return decode_infer_request(request, model, limits, shm);
  };
  auto on_answer = [this, request_template = error_answer(request, Status::ok())](
                       const std::string& /*request_id*/, const PendingInfer& pending, Result<ImageScores> scores) {
    inference::ModelStreamInferResponse answer;
    if (scores) {
      *answer.mutable_infer_response() = make_infer_response(pending.request, pending.model.signature, *scores);
    } else {
      answer = request_template;
      answer.set_error_message(to_grpc_status(scores.status()).error_message());
    }
    answered(std::move(answer), true);
  };
  const InferSubmitted submitted = model_infer(
      models_, admission_, ModelInferCall{std::move(admission), shm_, std::move(decode), std::move(on_answer)});
  if (!submitted.status.is_ok()) answered(error_answer(request, submitted.status), true);
}

}  // namespace tessera
