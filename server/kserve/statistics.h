// Triton's statistics extension (docs/protocol/extension_statistics.md): GET
// /v2/models[/{m}[/versions/{v}]]/stats and the gRPC ModelStatistics RPC, read from each served
// version's counters (server/models/model_statistics.h). What counts as a success or a failure
// is said there.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string_view>

#include "accel/common/status.h"
#include "kserve/grpc_predict_v2.pb.h"

namespace tessera {
class ModelRepository;
struct ServedModel;
}  // namespace tessera

namespace tessera::kserve {

// One served version's statistics. No response cache: cache_hit and cache_miss stay zero.
inference::ModelStatistics make_model_statistics(const ServedModel& model);

// Every served version of every model (`name` empty), of model `name` (`version` empty), or that
// one version. NOT_FOUND for a model or version not served; INVALID_ARGUMENT for a version that is
// not a number.
Result<inference::ModelStatisticsResponse> model_statistics(const ModelRepository& models, std::string_view name,
                                                            std::string_view version);

// The JSON Triton's HTTP endpoint answers: the proto's field names, 64-bit counters as plain JSON
// numbers (not protobuf's quoted strings).
nlohmann::json statistics_json(const inference::ModelStatisticsResponse& response);

}  // namespace tessera::kserve
