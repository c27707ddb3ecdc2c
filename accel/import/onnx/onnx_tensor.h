// TensorProto decoding: the numeric element types Tessera accepts, from raw_data or the typed
// repeated fields, little-endian.
#pragma once

#include <cstdint>
#include <vector>

#include "accel/common/status.h"
#include "accel/graph/tensor.h"
#include "onnx.pb.h"

namespace tessera::onnx_import {

// FLOAT, DOUBLE, INT32, INT64, INT8, UINT8 -> float32 tensor (integers converted exactly where
// they fit). External data and other types are INVALID_ARGUMENT / UNIMPLEMENTED naming `what`.
Result<Tensor> to_float_tensor(const tessera::onnx::TensorProto& proto, const std::string& what);

// INT64 or INT32 tensor -> int64 values (Reshape shapes, Clip bounds given as ints).
Result<std::vector<int64_t>> to_int64_values(const tessera::onnx::TensorProto& proto, const std::string& what);

}  // namespace tessera::onnx_import
