#include "server/kserve/model_signature.h"

#include "server/models/model_repository.h"

namespace tessera::kserve {

ModelSignature make_model_signature(const ServedModel& model) {
  const ModelConfig& config = model.config();
  ModelSignature s;
  s.name = config.name;
  s.version = std::to_string(model.version);
  s.platform = "tessera_" + model.precision;
  s.channels = config.input.channels;
  s.height = config.input.height;
  s.width = config.input.width;
  s.num_classes = model.num_classes();
  s.labels = config.labels;
  s.max_batch = static_cast<int>(model.batching.max_batch);
  return s;
}

}  // namespace tessera::kserve
