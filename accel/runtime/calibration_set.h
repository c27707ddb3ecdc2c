// The int8 calibration inputs of a model: the images of its [quantization] calibration folder,
// decoded and preprocessed exactly as requests are.
#pragma once

#include <vector>

#include "accel/common/status.h"
#include "accel/graph/tensor.h"
#include "accel/runtime/model_config.h"

namespace tessera {

// Batches (up to 32 images each) of the folder's JPEG/PNG files in name order, at most
// config.quantization.max_images. FAILED_PRECONDITION when the model names no folder or it
// holds no image; a file that does not decode is an error naming it.
Result<std::vector<Tensor>> load_calibration_set(const ModelConfig& config);

}  // namespace tessera
