// tessera.v1.Classifier on gRPC's callback API.
#pragma once

#include <grpcpp/grpcpp.h>

#include "server/batching/admission.h"
#include "tessera/v1/classifier.grpc.pb.h"

namespace tessera {

class ModelRepository;

// Classify hands the request to admission and the queue and returns its reactor at once; the
// worker's callback fills the response and finishes the RPC. ClassifyStream does the same per
// message of a stream (classify_stream.h). ListModels and the repository calls answer inline.
class ClassifierService final : public v1::Classifier::CallbackService {
 public:
  // `admission` is the daemon's, shared with every other door; it must outlive the service.
  ClassifierService(ModelRepository& models, Admission& admission);

  grpc::ServerUnaryReactor* Classify(grpc::CallbackServerContext* context, const v1::ClassifyRequest* request,
                                     v1::ClassifyResponse* response) override;
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
};

}  // namespace tessera
