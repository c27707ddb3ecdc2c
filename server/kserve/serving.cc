#include "server/kserve/serving.h"

#include "server/batching/inference_queue.h"
#include "server/batching/request_id.h"
#include "server/models/model_repository.h"

#ifndef TESSERA_VERSION
#error "TESSERA_VERSION is defined by server/CMakeLists.txt"
#endif

namespace tessera::kserve {

Result<KserveModel> find_model(const ModelRepository& models, std::string_view name, std::string_view version) {
  if (name.empty()) return Status::invalid_argument("model_name is empty; name the model");
  const ServedModel* served = models.find(name);
  if (served == nullptr) return Status::not_found("no model named '" + std::string(name) + "'");
  KserveModel model;
  model.served = served;
  model.signature = make_model_signature(*served);
  TESSERA_RETURN_IF_ERROR(check_model_version(model.signature, version));
  return model;
}

void set_job_input(InferenceJob& job, const InferInput& input) {
  job.image = {};
  job.tensor = {};
  job.pixels = nullptr;
  switch (input.kind) {
    case InputKind::kEncodedImage: job.image = input.encoded_image; break;
    case InputKind::kFloatTensor: job.tensor = input.tensor; break;
    case InputKind::kPixels: job.pixels = &input.pixels; break;
  }
}

std::string log_request_id(const std::string& client_id) {
  return is_valid_request_id(client_id) ? client_id : make_request_id();
}

std::string_view server_version() { return TESSERA_VERSION; }

}  // namespace tessera::kserve
