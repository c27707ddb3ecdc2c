// ModelStreamInfer (Triton's streaming extension of the KServe v2 gRPC service; tritonclient's
// start_stream / async_stream_infer): a bidirectional stream of ModelInferRequests, each answered
// by one ModelStreamInferResponse, in the order the answers finish, matched by the request's id:
// the ModelInferResponse, or error_message for a request that failed (the stream goes on). A
// paced stream (paced_stream.h), as ClassifyStream.
#pragma once

#include <grpcpp/grpcpp.h>

#include "kserve/grpc_predict_v2.grpc.pb.h"
#include "server/grpc/paced_stream.h"

namespace tessera {
class Admission;
class ModelRepository;

namespace kserve {
class SharedMemoryRegistry;
}  // namespace kserve

class StreamInferReactor final : public PacedStream<inference::ModelInferRequest, inference::ModelStreamInferResponse> {
 public:
  // `shm`: the system shared-memory regions tensors may name (null: none).
  StreamInferReactor(ModelRepository& models, Admission& admission, const kserve::SharedMemoryRegistry* shm,
                     grpc::CallbackServerContext* context);

 private:
  // Decodes and submits `request`, or answers its error.
  void submit(inference::ModelInferRequest request) override;

  ModelRepository& models_;
  Admission& admission_;
  const kserve::SharedMemoryRegistry* shm_;
  grpc::CallbackServerContext* context_;
};

}  // namespace tessera
