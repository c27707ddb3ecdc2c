// Server and model metadata (GET /v2, GET /v2/models/{m}; ServerMetadata, ModelMetadata).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "kserve/grpc_predict_v2.pb.h"
#include "server/kserve/model_signature.h"

namespace tessera::kserve {

inline constexpr std::string_view kServerName = "tesserad";

// The protocol extensions tesserad implements, by Triton's names: "classification",
// "model_repository", "model_configuration", "statistics", "binary_tensor_data", and
// "system_shared_memory" when `shared_memory` (--allow-client-shm) is on; not CUDA shared memory,
// sequences, trace or logging.
std::vector<std::string> server_extensions(bool shared_memory);

inference::ServerMetadataResponse make_server_metadata(std::string_view server_version, bool shared_memory);
nlohmann::json server_metadata_json(std::string_view server_version, bool shared_memory);

// Advertises the model's input as FP32 [1,C,H,W] and its output as FP32 [1,N]. The other input
// forms (BYTES image, UINT8 pixels; infer_request.h) are accepted but not listed: the protocol
// has one datatype per tensor.
inference::ModelMetadataResponse make_model_metadata(const ModelSignature& model);
nlohmann::json model_metadata_json(const ModelSignature& model);

}  // namespace tessera::kserve
