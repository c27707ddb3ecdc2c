#include "accel/runtime/model_import.h"

#include "accel/import/caffe/caffe_importer.h"
#include "accel/import/onnx/onnx_importer.h"

namespace tessera {

Result<Graph> import_model(const ModelConfig& config) {
  if (config.format == "onnx") return import_onnx_file(config.file);
  if (config.format == "caffe") return import_caffe_files(config.file, config.weights);
  return Status::invalid_argument("model format '" + config.format + "' is not supported (onnx, caffe)");
}

}  // namespace tessera
