// The ONNX importer (accel/import/onnx): a model file's bytes -> Graph, or an error.
#include <cstddef>
#include <cstdint>
#include <span>

#include "accel/import/onnx/onnx_importer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)tessera::import_onnx(std::span<const uint8_t>(data, size));
  return 0;
}
