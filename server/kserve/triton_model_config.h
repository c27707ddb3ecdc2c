// Triton's model configuration extension (docs/protocol/extension_model_configuration.md): a
// served model version described as Triton's ModelConfig, for GET
// /v2/models/{m}[/versions/{v}]/config and the gRPC ModelConfig RPC. Everything in it comes from
// the model's folder (model.toml, its files) and how the daemon loaded it.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "accel/common/status.h"
#include "kserve/model_config.pb.h"

namespace tessera {
struct ServedModel;
}

namespace tessera::kserve {

// The model version's ModelConfig: name; backend "tessera" with platform "tessera_onnx" or
// "tessera_caffe"; max_batch_size (the batcher's max batch; dims then leave out the batch
// dimension); the FP32 NCHW input [C, H, W] and the FP32 output [classes] with its labels file;
// dynamic_batching from [batching]; one instance group over the model's device instances; the
// version policy; parameters naming the precision and device.
inference::ModelConfig make_triton_model_config(const ServedModel& model);

// The JSON Triton's HTTP endpoint answers: the message in protobuf's JSON mapping with the proto
// field names and every field (defaults too), and the 64-bit integers as JSON numbers, as Triton
// writes them (protobuf's mapping would quote them).
Result<nlohmann::json> triton_model_config_json(const inference::ModelConfig& config);

}  // namespace tessera::kserve
