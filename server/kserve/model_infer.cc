#include "server/kserve/model_infer.h"

#include <memory>
#include <utility>

#include "server/batching/inference_queue.h"
#include "server/kserve/kserve_model.h"

namespace tessera::kserve {

InferSubmitted model_infer(const ModelRepository& models, Admission& admission, ModelInferCall call) {
  AdmissionRequest& base = call.base;
  auto refuse = [&](const Status& status) {
    const Admitted refused = admission.refuse(base, status);
    return InferSubmitted{refused.request_id(), refused.status()};
  };
  auto model = find_model(models, base.model, base.version);
  if (!model) return refuse(model.status());
  auto pending = std::make_shared<PendingInfer>();
  pending->shm.registry = call.shm;
  auto decoded = call.decode(model->signature, admission.queue().options().decode_limits, &pending->shm);
  if (!decoded) return refuse(decoded.status());
  pending->request = std::move(decoded).value();
  pending->model = std::move(model).value();
  base.request_id = pending->request.id;
  auto done = [pending, answer = std::move(call.answer)](const std::string& request_id, Result<ImageScores> scores) {
    Status status = scores.status();
    if (scores) status = write_shm_outputs(pending->shm, *scores);  // outputs into their regions first
    answer(request_id, *pending, status.is_ok() ? std::move(scores) : Result<ImageScores>(status));
  };
  return submit_infer(admission, std::move(base), pending, std::move(done));
}

}  // namespace tessera::kserve
