#include "accel/runtime/inference_backend.h"

#include <algorithm>
#include <cmath>

namespace tessera {

const char* precision_name(Precision p) { return p == Precision::kInt8 ? "int8" : "fp32"; }

Result<Precision> parse_precision(const std::string& name) {
  if (name == "int8") return Precision::kInt8;
  if (name == "fp32") return Precision::kFp32;
  return Status::invalid_argument("precision must be int8 or fp32, not '" + name + "'");
}

bool graph_ends_with_softmax(const Graph& graph) {
  for (const Node& node : graph.nodes) {
    if (node.outputs[0] == graph.outputs[0].name) return node.op == OpKind::kSoftmax;
  }
  return false;
}

void softmax_rows(std::vector<std::vector<float>>& rows, bool already) {
  if (already) return;
  for (auto& row : rows) {
    if (row.empty()) continue;
    const float max = *std::max_element(row.begin(), row.end());
    double sum = 0;
    for (float& v : row) sum += (v = std::exp(v - max));
    for (float& v : row) v = static_cast<float>(v / sum);
  }
}

Result<std::vector<std::vector<float>>> split_rows(const Tensor& scores, int64_t n, int classes) {
  const auto k = static_cast<size_t>(classes);
  if (scores.data.size() != static_cast<size_t>(n) * k) {
    return Status::internal("model output " + shape_to_string(scores.shape) + " is not " + std::to_string(n) + " x " +
                            std::to_string(classes));
  }
  std::vector<std::vector<float>> rows(static_cast<size_t>(n));
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i].assign(scores.data.begin() + static_cast<std::ptrdiff_t>(i * k),
                   scores.data.begin() + static_cast<std::ptrdiff_t>((i + 1) * k));
  }
  return rows;
}

}  // namespace tessera
