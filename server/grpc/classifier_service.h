// tessera.v1.Classifier on gRPC's callback API.
#pragma once

#include <grpcpp/grpcpp.h>

#include "server/batching/admission.h"
#include "server/grpc/classify_unary.h"
#include "tessera/v1/classifier.grpc.pb.h"

namespace tessera {

class ModelRepository;

// Classify runs on the async API's queues of `unary_door()` (classify_unary.h): admission and the
// queue on the thread that polled the call; whoever answers the job finishes the RPC.
// ClassifyStream hands each message of a stream to admission and the queue the same way
// (classify_stream.h). ListModels and the repository calls answer inline (callback API).
class ClassifierService final : public ClassifierBase {
 public:
  // `admission` is the daemon's, shared with every other door; it must outlive the service.
  // `unary_threads`: Classify's completion queues, one thread each.
  ClassifierService(ModelRepository& models, Admission& admission, unsigned unary_threads);

  // Classify's queues: the server that registers this service must be given this door too.
  GrpcQueueDoor& unary_door() { return unary_door_; }
  grpc::ServerBidiReactor<v1::ClassifyRequest, v1::ClassifyResponse>* ClassifyStream(
      grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* ListModels(grpc::CallbackServerContext* context, const v1::ListModelsRequest* request,
                                       v1::ListModelsResponse* response) override;
  // The repository calls: answered inline (a load only starts; it runs on the repository's thread).
  grpc::ServerUnaryReactor* GetModelIndex(grpc::CallbackServerContext* context, const v1::ModelIndexRequest* request,
                                          v1::ModelIndexResponse* response) override;
  grpc::ServerUnaryReactor* LoadModel(grpc::CallbackServerContext* context, const v1::LoadModelRequest* request,
                                      v1::LoadModelResponse* response) override;
  grpc::ServerUnaryReactor* UnloadModel(grpc::CallbackServerContext* context, const v1::UnloadModelRequest* request,
                                        v1::UnloadModelResponse* response) override;

 private:
  ModelRepository& models_;
  Admission& admission_;
  ClassifyUnaryDoor unary_door_;
};

}  // namespace tessera
