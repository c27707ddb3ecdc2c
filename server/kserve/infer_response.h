// Inference results -> ModelInferResponse (gRPC) and the JSON inference response (REST).
//
// Each requested output (or, when none was requested, the model's one output) becomes:
//   FP32, shape [1, N]: the class probabilities; or, when the output asked for
//   "classification": K, BYTES, shape [1, K] (K capped at N): Triton's classification extension.
// gRPC carries every output in raw_output_contents (little-endian; BYTES length-prefixed).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <span>
#include <string>
#include <vector>

#include "kserve/grpc_predict_v2.pb.h"
#include "server/kserve/infer_request.h"
#include "server/kserve/model_signature.h"

namespace tessera::kserve {

// The top `k` classes as Triton formats them, "<score>:<index>[:<label>]", highest score first
// (ties: lower index first); the score as std::to_string prints a float ("0.912345"), the label
// left out for an index past the labels or with an empty label.
std::vector<std::string> classification_strings(std::span<const float> probabilities, int k,
                                                const std::vector<std::string>& labels);

// `probabilities` holds the model's output for the request's one image.
inference::ModelInferResponse make_infer_response(const InferRequest& request, const ModelSignature& model,
                                                  std::span<const float> probabilities);

nlohmann::json infer_response_json(const InferRequest& request, const ModelSignature& model,
                                   std::span<const float> probabilities);

}  // namespace tessera::kserve
