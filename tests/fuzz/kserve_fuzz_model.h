// The model signature the KServe fuzz targets decode against: the bundled model's shape
// (1 x 28 x 28 in, ten classes out) and tesserad's default max batch (8 images a request).
#pragma once

#include "server/kserve/model_signature.h"

namespace tessera::fuzz {

inline kserve::ModelSignature fuzz_model_signature() {
  kserve::ModelSignature model;
  model.name = "fashion-mnist";
  model.platform = "tessera_int8";
  model.channels = 1;
  model.height = 28;
  model.width = 28;
  model.num_classes = 10;
  model.max_batch = 8;
  model.labels = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag"};
  return model;
}

}  // namespace tessera::fuzz
