// Inference results -> ModelInferResponse (gRPC) and the JSON inference response (REST).
//
// Each requested output (or, when none was requested, the model's one output) becomes, for a
// request of N images (row i is image i, in request order):
//   FP32, shape [N, C]: the class probabilities; or, when the output asked for
//   "classification": K, BYTES, shape [N, K] (K capped at C): Triton's classification extension.
// gRPC carries every output in raw_output_contents (little-endian; BYTES length-prefixed). HTTP
// carries an output in JSON "data", or, when asked as binary data (infer_request.h), after the
// JSON header in the same raw layout, the output saying "parameters": {"binary_data_size": n}.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <span>
#include <string>
#include <vector>

#include "kserve/grpc_predict_v2.pb.h"
#include "server/kserve/infer_request.h"
#include "server/kserve/model_signature.h"

namespace tessera::kserve {

// The model's output for each image of a request, in request order.
using ImageScores = std::vector<std::vector<float>>;

// The top `k` classes as Triton formats them, "<score>:<index>[:<label>]", highest score first
// (ties: lower index first); the score as std::to_string prints a float ("0.912345"), the label
// left out for an index past the labels or with an empty label.
std::vector<std::string> classification_strings(std::span<const float> probabilities, int k,
                                                const std::vector<std::string>& labels);

inference::ModelInferResponse make_infer_response(const InferRequest& request, const ModelSignature& model,
                                                  const ImageScores& scores);

// The JSON response with every output in "data" (binary data requests are not looked at).
nlohmann::json infer_response_json(const InferRequest& request, const ModelSignature& model, const ImageScores& scores);

// An HTTP response body: the JSON header, then the binary outputs' bytes in output order.
struct HttpInferBody {
  std::string body;
  size_t json_length = 0;  // the JSON header's bytes; all of the body when no output is binary
  bool binary = false;     // some output is binary data: send Inference-Header-Content-Length
};
HttpInferBody infer_response_http(const InferRequest& request, const ModelSignature& model, const ImageScores& scores);

}  // namespace tessera::kserve
