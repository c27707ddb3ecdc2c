// What the two KServe transports (kserve_grpc_service.h, kserve_routes.h) share between decoding a
// request and handing it to admission (batching/admission.h). Both give admission the client's
// KServe id under RequestIdRule::kReplace: the logs go by it when it is a usable request id, else
// by a fresh one; the response echoes the client's id either way.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "accel/common/status.h"
#include "server/batching/inference_job.h"
#include "server/kserve/infer_request.h"
#include "server/kserve/model_signature.h"

namespace tessera {
class ModelRepository;
struct ServedModel;
}  // namespace tessera

namespace tessera::kserve {

// A served model with the signature the codecs describe it by.
struct KserveModel {
  std::shared_ptr<const ServedModel> served;
  ModelSignature signature;
};

// The model `name` at `version` ("" = its newest served version). An empty name is
// INVALID_ARGUMENT (the protocol always names the model); an unknown name or version is NOT_FOUND.
Result<KserveModel> find_model(const ModelRepository& models, std::string_view name, std::string_view version);

// A job's view of the decoded input (image bytes, FP32 tensor or pixels); `input` must outlive
// the job, i.e. be kept alive by its `done` callback.
JobInput job_input(const InferInput& input);

// tesserad's version (the CMake project version), for server metadata.
std::string_view server_version();

}  // namespace tessera::kserve
