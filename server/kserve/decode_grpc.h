// ModelInferRequest (gRPC) -> InferRequest. The accepted forms are in infer_request.h.
#pragma once

#include "accel/common/status.h"
#include "accel/image/image.h"
#include "kserve/grpc_predict_v2.pb.h"
#include "server/kserve/infer_request.h"

namespace tessera::kserve {

struct ShmRequest;

// `model` is the model request.model_name names (the caller looked it up); model_version is
// checked against it (NOT_FOUND). Every other error is INVALID_ARGUMENT naming the field. With
// `shm`, tensors may name system shared-memory regions (shared_memory_params.h): the input is read
// from its region and the outputs to write are added to shm->outputs; without, that is an error.
Result<InferRequest> decode_infer_request(const inference::ModelInferRequest& request, const ModelSignature& model,
                                          const DecodeLimits& limits = {}, ShmRequest* shm = nullptr);

}  // namespace tessera::kserve
