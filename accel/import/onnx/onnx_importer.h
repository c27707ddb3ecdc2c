// ONNX -> Graph. Reads the protobuf model (opset 11-18 of the default domain), converts the
// supported operators into typed IR nodes, folds Constant nodes and initializers into
// Graph::constants, evaluates at load every node whose operands are known then (shape arithmetic,
// masks: onnx_fold.h), infers every node's shape, and fuses the exporters' LayerNorm and GELU
// chains (passes.h). An unsupported operator or a malformed file is an error naming the node.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>

#include "accel/common/status.h"
#include "accel/graph/graph.h"

namespace tessera {

inline constexpr int64_t kMinOnnxOpset = 11;
inline constexpr int64_t kMaxOnnxOpset = 18;

Result<Graph> import_onnx(std::span<const uint8_t> bytes);
Result<Graph> import_onnx_file(const std::filesystem::path& path);

}  // namespace tessera
