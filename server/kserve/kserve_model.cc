#include "server/kserve/kserve_model.h"

#include "server/models/model_repository.h"

#ifndef TESSERA_VERSION
#error "TESSERA_VERSION is defined by server/CMakeLists.txt"
#endif

namespace tessera::kserve {

Result<KserveModel> find_model(const ModelRepository& models, std::string_view name, std::string_view version) {
  if (name.empty()) return Status::invalid_argument("model_name is empty; name the model");
  KserveModel model;
  TESSERA_ASSIGN_OR_RETURN(model.served, models.resolve(name, version));
  model.signature = make_model_signature(*model.served);
  TESSERA_RETURN_IF_ERROR(check_model_version(model.signature, version));
  return model;
}

JobInput job_input(const InferInput& input) {
  switch (input.kind) {
    case InputKind::kEncodedImage: return EncodedImage{input.encoded_image};
    case InputKind::kFloatTensor: return InputTensor{input.tensor};
    case InputKind::kPixels: return DecodedPixels{&input.pixels};
  }
  return EncodedImage{input.encoded_image};
}

std::string_view server_version() { return TESSERA_VERSION; }

}  // namespace tessera::kserve
