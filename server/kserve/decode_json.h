// The JSON body of POST /v2/models/{m}[/versions/{v}]/infer -> InferRequest. The accepted forms
// are in infer_request.h; `data` may be flat or nested. The binary tensor data extension is not
// supported: an input with the "binary_data_size" parameter is refused. The output parameter
// "binary_data" is ignored (outputs always come back as JSON).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string_view>

#include "accel/common/status.h"
#include "accel/image/image.h"
#include "server/kserve/infer_request.h"

namespace tessera::kserve {

// The model (and its version) come from the URL; the caller checks the version with
// check_model_version(). Errors are INVALID_ARGUMENT naming the field, e.g. "inputs[0].data".
Result<InferRequest> decode_infer_request_json(const nlohmann::json& body, const ModelSignature& model,
                                               const DecodeLimits& limits = {});

// The HTTP body as received: parses it, then decodes it as above; malformed JSON is
// INVALID_ARGUMENT. (Its own name: a std::string converts to both json and string_view.)
Result<InferRequest> decode_infer_request_body(std::string_view body, const ModelSignature& model,
                                               const DecodeLimits& limits = {});

}  // namespace tessera::kserve
