// The one ModelInfer body behind KServe's transports (gRPC's unary call and stream in grpc/, REST
// in routes/): the model resolved once, the request decoded by the transport's codec, its images
// admitted as one group (admission.h: one id, one slot, one statistics record; each image a job
// the dynamic batcher may batch with other callers' images), the outputs written to their
// shared-memory regions, the answer given once.
#pragma once

#include <functional>
#include <string>

#include "accel/common/status.h"
#include "accel/image/image.h"
#include "server/batching/admission.h"
#include "server/kserve/infer_request.h"
#include "server/kserve/infer_response.h"
#include "server/kserve/kserve_model.h"
#include "server/kserve/model_signature.h"
#include "server/kserve/shared_memory_params.h"

namespace tessera {
class ModelRepository;
}  // namespace tessera

namespace tessera::kserve {

// The decoded request and its model, kept alive until the request is answered (jobs point into it).
struct PendingInfer {
  InferRequest request;
  KserveModel model;
  ShmRequest shm;  // the outputs that go into system shared-memory regions, and the regions they hold
};

// The transport's codec: the request for `model`, its outputs bound for shared memory into *shm.
using InferDecode =
    std::function<Result<InferRequest>(const ModelSignature& model, const DecodeLimits& limits, ShmRequest* shm)>;

// The answer: the id the request goes by in the logs, and every image's probabilities in request
// order (already in their shared-memory regions), or the error of the request.
using InferAnswer =
    std::function<void(const std::string& request_id, const PendingInfer& pending, Result<ImageScores> scores)>;

struct ModelInferCall {
  // Model, version, via, the client's id (kReplace), bytes, deadline, cancel; `received` is when
  // the door had the request (Triton's REQUEST_START), before it was decoded.
  AdmissionRequest base;
  const SharedMemoryRegistry* shm = nullptr;  // regions tensors may name (null: none)
  InferDecode decode;
  InferAnswer answer;
};

// What model_infer answers: the id the request goes by in the logs, and OK or the refusal.
struct InferSubmitted {
  std::string request_id;
  Status status;
};

// Finds the model, decodes, and submits; the request's "timeout" parameter, when given, tightens
// its deadline. A refusal (unknown model, bad request, admission's) is logged by admission and
// returned, and `answer` never runs; otherwise `answer` runs once, on the thread of the last
// image's answer. The id is the decoded request's from then on.
InferSubmitted model_infer(const ModelRepository& models, Admission& admission, ModelInferCall call);

}  // namespace tessera::kserve
