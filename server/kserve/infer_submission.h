// A decoded KServe inference request on its way through admission: each image of its input
// tensor is its own InferenceJob (so the dynamic batcher may batch it with other callers'
// images), and the request is answered once, when every job has answered.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "accel/common/status.h"
#include "server/batching/admission.h"
#include "server/kserve/infer_request.h"
#include "server/kserve/infer_response.h"
#include "server/kserve/kserve_model.h"
#include "server/kserve/shared_memory_params.h"

namespace tessera::kserve {

// The decoded request and its model, kept alive until the request is answered (jobs point into it).
struct PendingInfer {
  InferRequest request;
  KserveModel model;
  ShmRequest shm;  // the outputs that go into system shared-memory regions, and the regions they hold
};

// The id the request goes by in the logs, and every image's probabilities in request order, or
// the error of the first image (in request order) that failed: one failed image fails the request.
using InferDone = std::function<void(const std::string& request_id, Result<ImageScores>)>;

// What submit_infer answers: the id the request goes by in the logs, and OK or the refusal.
struct InferSubmitted {
  std::string request_id;
  Status status;
};

// Admits each image of `pending` with `base` (its input, top-k and version set here; the
// request's "timeout" parameter, when given, tightens its deadline). The first refusal is
// returned (logged once by admission) and nothing is submitted. Otherwise every job goes to the
// queue and `done` runs once, on the thread of the last job's answer. When base.takes_slot the
// request holds one in-flight slot (refused UNAVAILABLE when draining) until `done` has returned,
// so a drain waits for all its images.
InferSubmitted submit_infer(Admission& admission, AdmissionRequest base, std::shared_ptr<const PendingInfer> pending,
                            InferDone done);

}  // namespace tessera::kserve
