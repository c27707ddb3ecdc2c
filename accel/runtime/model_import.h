// A model folder's graph, imported by its model.toml format: ONNX (`file`) or Caffe (`file` the
// deploy prototxt, `weights` the caffemodel).
#pragma once

#include "accel/common/status.h"
#include "accel/graph/graph.h"
#include "accel/runtime/model_config.h"

namespace tessera {

Result<Graph> import_model(const ModelConfig& config);

}  // namespace tessera
