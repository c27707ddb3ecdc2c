// The body of POST /v2/models/{m}[/versions/{v}]/infer -> InferRequest. The accepted forms are
// in infer_request.h; `data` may be flat or nested. With Triton's binary tensor data extension
// the body is the JSON header (its length in the Inference-Header-Content-Length header) and
// then the binary data of each input with the "binary_data_size" parameter, in input order, in
// the raw layout (raw_contents.h: little-endian, BYTES elements length-prefixed); such an input
// has no "data". Every byte after the JSON must belong to an input. The outputs' "binary_data"
// and the request's "binary_data_output" parameters are read into the request.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "accel/common/status.h"
#include "accel/image/image.h"
#include "server/kserve/infer_request.h"

namespace tessera::kserve {

struct ShmRequest;

// What one JSON infer body may be for a model: at most `multiple` times the model's FP32 input
// written out as JSON (24 characters a number plus 4 KiB of names and shape) in bytes, and as
// many times its input's element count (plus 1024) in JSON values; nested at most max_depth
// deep (the widest accepted form, a 4-D data array in inputs[0], needs 8). The depth and value
// count hold while parsing, before a JSON document exists.
struct JsonBodyLimits {
  uint64_t max_bytes = 0;
  size_t max_values = 0;
  size_t max_depth = 0;
};
inline constexpr uint32_t kDefaultJsonBodyMultiple = 16;
inline constexpr size_t kMaxJsonDepth = 32;
JsonBodyLimits json_body_limits(const ModelSignature& model, uint32_t multiple = kDefaultJsonBodyMultiple);

// What a whole infer body may be: its JSON (json_body_limits' bytes) and, with the binary tensor
// data extension, binary data of up to the model's max batch of FP32 inputs after it.
uint64_t infer_body_limit(const ModelSignature& model, uint32_t multiple = kDefaultJsonBodyMultiple);

// The model (and its version) come from the URL; the caller checks the version with
// check_model_version(). `binary`: the bytes after the JSON header (nullopt: the body had no
// Inference-Header-Content-Length, so no input may have binary data). Errors are
// INVALID_ARGUMENT naming the field, e.g. "inputs[0].data".
// With `shm`, tensors may name system shared-memory regions (shared_memory_params.h): the input is
// read from its region, and the outputs to write are added to shm->outputs; without, that is an
// error.
Result<InferRequest> decode_infer_request_json(const nlohmann::json& body, const ModelSignature& model,
                                               const DecodeLimits& limits = {},
                                               std::optional<std::string_view> binary = std::nullopt,
                                               ShmRequest* shm = nullptr);

// The Inference-Header-Content-Length value: digits only, at most `body_size`.
Result<size_t> inference_header_length(std::string_view value, size_t body_size);

// The HTTP body as received, with the Inference-Header-Content-Length header's value when the
// request has one: splits and parses it, then decodes it as above; malformed JSON is
// INVALID_ARGUMENT, and so is a JSON part past `json_limits`' depth or value count (or bytes).
// (Its own name: a std::string converts to both json and string_view.)
Result<InferRequest> decode_infer_request_body(std::string_view body, const ModelSignature& model,
                                               const DecodeLimits& limits = {},
                                               const JsonBodyLimits* json_limits = nullptr,
                                               std::optional<std::string_view> header_length = std::nullopt,
                                               ShmRequest* shm = nullptr);

}  // namespace tessera::kserve
