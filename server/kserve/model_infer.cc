#include "server/kserve/model_infer.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <utility>
#include <vector>

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
  auto decoded = call.decode(model->signature, admission.input_stage().limits(), &pending->shm);
  if (!decoded) return refuse(decoded.status());
  pending->request = std::move(decoded).value();
  pending->model = std::move(model).value();
  const InferRequest& request = pending->request;
  base.request_id = request.id;
  base.top_k = static_cast<uint64_t>(request.top_k());
  base.resolved = pending->model.served;  // runs on the version it was decoded against, which the answer names
  if (request.timeout_us > 0) {
    base.deadline = std::min(base.deadline, base.received + std::chrono::microseconds(request.timeout_us));
  }
  base.input_name = "inputs[0]";
  std::vector<JobInput> inputs;
  inputs.reserve(request.images.size());
  for (const InferInput& image : request.images) inputs.push_back(job_input(image));
  AdmittedGroup group = admission.admit_group(std::move(base), std::move(inputs));
  if (!group) return {group.request_id(), group.status()};
  std::string request_id = group.request_id();
  admission.submit_group(std::move(group), [pending, request_id, answer = std::move(call.answer)](
                                               Result<std::vector<ClassifyResult>> results) {
    Result<ImageScores> scores = results.status();
    if (results) {
      ImageScores all;
      all.reserve(results->size());
      for (ClassifyResult& result : *results) all.push_back(std::move(result.probabilities));
      // The outputs go into their regions before the answer says so.
      const Status written = write_shm_outputs(pending->shm, all);
      scores = written.is_ok() ? Result<ImageScores>(std::move(all)) : Result<ImageScores>(written);
    }
    answer(request_id, *pending, std::move(scores));
  });
  return {std::move(request_id), Status::ok()};
}

}  // namespace tessera::kserve
