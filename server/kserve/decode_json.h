// The JSON body of POST /v2/models/{m}[/versions/{v}]/infer -> InferRequest. The accepted forms
// are in infer_request.h; `data` may be flat or nested. The binary tensor data extension is not
// supported: an input with the "binary_data_size" parameter is refused. The output parameter
// "binary_data" is ignored (outputs always come back as JSON).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <cstdint>
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

// The model (and its version) come from the URL; the caller checks the version with
// check_model_version(). Errors are INVALID_ARGUMENT naming the field, e.g. "inputs[0].data".
// With `shm`, tensors may name system shared-memory regions (shared_memory_params.h): the input has
// no "data" then, and the outputs to write are added to shm->outputs; without, that is an error.
Result<InferRequest> decode_infer_request_json(const nlohmann::json& body, const ModelSignature& model,
                                               const DecodeLimits& limits = {}, ShmRequest* shm = nullptr);

// The HTTP body as received: parses it, then decodes it as above; malformed JSON is
// INVALID_ARGUMENT, and so is a body past `json_limits`' depth or value count (or its bytes).
// (Its own name: a std::string converts to both json and string_view.)
Result<InferRequest> decode_infer_request_body(std::string_view body, const ModelSignature& model,
                                               const DecodeLimits& limits = {},
                                               const JsonBodyLimits* json_limits = nullptr, ShmRequest* shm = nullptr);

}  // namespace tessera::kserve
