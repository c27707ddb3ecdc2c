// The bytes of a KServe v2 inference call as the client builds and reads them, for gRPC
// (ModelInferRequest/Response) and for HTTP (JSON, or JSON plus Triton's binary tensor data
// extension). Pure functions: no transport here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "accel/common/status.h"
#include "kserve/grpc_predict_v2.pb.h"

namespace tessera::client::kserve {

// The one input tensor a request sends. `raw` is its data as the binary extension and gRPC's
// raw_input_contents lay it out: FP32 as little-endian floats, BYTES as elements each preceded by
// its length (4 bytes, little-endian).
struct InputTensor {
  std::string name;
  std::string datatype;  // "BYTES" | "FP32"
  std::vector<int64_t> shape;
  std::string raw;
};

// What one inference asks: the input, and the top `classification` classes of output
// `output_name` (Triton's classification extension).
struct InferSpec {
  std::string model;
  std::string version;  // "" = the server's choice
  std::string id;
  InputTensor input;
  std::string output_name;
  unsigned classification = 1;
};

// One class of a classification output ("score:index:label" on the wire; label may be absent).
struct ScoredClass {
  float score = 0;
  int64_t index = 0;
  std::string label;
};

// What the client keeps of an answer.
struct InferAnswer {
  std::string model_name;
  std::string model_version;
  std::string id;
  std::vector<ScoredClass> classes;
};

// Appends one BYTES element (length prefix, then the bytes).
void append_bytes_element(std::string& raw, std::string_view element);

// Splits length-prefixed BYTES elements; an error when a length runs past the end.
Result<std::vector<std::string>> split_bytes_elements(std::string_view raw);

// "0.970000:9:Ankle boot" -> {0.97, 9, "Ankle boot"}.
Result<ScoredClass> parse_classification(std::string_view text);

inference::ModelInferRequest grpc_request(const InferSpec& spec);
Result<InferAnswer> grpc_answer(const inference::ModelInferResponse& response, const std::string& output_name);

// An HTTP request body: the JSON header alone, or (binary input) the JSON header followed by the
// input's raw bytes, `header_length` telling where the JSON ends (Inference-Header-Content-Length).
struct HttpBody {
  std::string bytes;
  std::optional<size_t> header_length;  // set when the binary extension is used
};

// `binary_input`: the input's data after the JSON (binary_data_size); otherwise in its "data"
// array (FP32 numbers; a BYTES element as base64 text). `binary_output`: the classification
// strings asked for as binary data (parameters.binary_data).
HttpBody http_request(const InferSpec& spec, bool binary_input, bool binary_output);

// Reads a 200 answer's body; `header_length` is Inference-Header-Content-Length when the
// response carried it.
Result<InferAnswer> http_answer(std::string_view body, std::optional<size_t> header_length,
                                const std::string& output_name);

// The "error" of an HTTP error body ({"error": "..."}), or the body itself when it is not one.
std::string http_error_message(std::string_view body);

}  // namespace tessera::client::kserve
