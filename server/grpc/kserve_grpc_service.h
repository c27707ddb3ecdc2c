// inference.GRPCInferenceService (the KServe v2 / Open Inference Protocol over gRPC) on the
// callback API, next to tessera.v1.Classifier in the same grpc::Server.
#pragma once

#include <grpcpp/grpcpp.h>

#include "kserve/grpc_predict_v2.grpc.pb.h"
#include "server/batching/admission.h"

namespace tessera {
class ModelRepository;

namespace kserve {
class SharedMemoryRegistry;
}  // namespace kserve

// ModelInfer decodes the request, hands its images to admission as one group (model_infer.h) and
// returns its reactor at once; the last image's callback encodes the response and finishes the
// RPC. ModelStreamInfer does the same per message of a stream. Health, metadata and
// the repository extension answer inline (a load only starts: it runs on the repository's loader
// thread). ServerReady and ModelReady say false once the daemon drains.
class KserveGrpcService final : public inference::GRPCInferenceService::CallbackService {
 public:
  // `admission`: the daemon's, shared with every other door (images are checked against its
  // queue's decode limits). `shm`: the system shared-memory regions (kserve_grpc_shared_memory.cc),
  // shared with REST; null: those RPCs are UNIMPLEMENTED. Both must outlive the service.
  KserveGrpcService(ModelRepository& models, Admission& admission, kserve::SharedMemoryRegistry* shm = nullptr);

  grpc::ServerUnaryReactor* ServerLive(grpc::CallbackServerContext* context,
                                       const inference::ServerLiveRequest* request,
                                       inference::ServerLiveResponse* response) override;
  grpc::ServerUnaryReactor* ServerReady(grpc::CallbackServerContext* context,
                                        const inference::ServerReadyRequest* request,
                                        inference::ServerReadyResponse* response) override;
  grpc::ServerUnaryReactor* ModelReady(grpc::CallbackServerContext* context,
                                       const inference::ModelReadyRequest* request,
                                       inference::ModelReadyResponse* response) override;
  grpc::ServerUnaryReactor* ServerMetadata(grpc::CallbackServerContext* context,
                                           const inference::ServerMetadataRequest* request,
                                           inference::ServerMetadataResponse* response) override;
  grpc::ServerUnaryReactor* ModelMetadata(grpc::CallbackServerContext* context,
                                          const inference::ModelMetadataRequest* request,
                                          inference::ModelMetadataResponse* response) override;
  grpc::ServerUnaryReactor* ModelInfer(grpc::CallbackServerContext* context,
                                       const inference::ModelInferRequest* request,
                                       inference::ModelInferResponse* response) override;
  // Triton's streaming extension (kserve_stream_infer.h).
  grpc::ServerBidiReactor<inference::ModelInferRequest, inference::ModelStreamInferResponse>* ModelStreamInfer(
      grpc::CallbackServerContext* context) override;

  // The repository extension (kserve_grpc_repository.cc), over the same ModelRepository as REST's
  // /v2/repository/* and tessera.v1's GetModelIndex/LoadModel/UnloadModel.
  grpc::ServerUnaryReactor* RepositoryIndex(grpc::CallbackServerContext* context,
                                            const inference::RepositoryIndexRequest* request,
                                            inference::RepositoryIndexResponse* response) override;
  grpc::ServerUnaryReactor* RepositoryModelLoad(grpc::CallbackServerContext* context,
                                                const inference::RepositoryModelLoadRequest* request,
                                                inference::RepositoryModelLoadResponse* response) override;
  grpc::ServerUnaryReactor* RepositoryModelUnload(grpc::CallbackServerContext* context,
                                                  const inference::RepositoryModelUnloadRequest* request,
                                                  inference::RepositoryModelUnloadResponse* response) override;

  // The system shared-memory extension (kserve_grpc_shared_memory.cc).
  grpc::ServerUnaryReactor* SystemSharedMemoryStatus(grpc::CallbackServerContext* context,
                                                     const inference::SystemSharedMemoryStatusRequest* request,
                                                     inference::SystemSharedMemoryStatusResponse* response) override;
  grpc::ServerUnaryReactor* SystemSharedMemoryRegister(
      grpc::CallbackServerContext* context, const inference::SystemSharedMemoryRegisterRequest* request,
      inference::SystemSharedMemoryRegisterResponse* response) override;
  grpc::ServerUnaryReactor* SystemSharedMemoryUnregister(
      grpc::CallbackServerContext* context, const inference::SystemSharedMemoryUnregisterRequest* request,
      inference::SystemSharedMemoryUnregisterResponse* response) override;
  // Triton's model configuration and statistics extensions (kserve_grpc_config.cc), the same
  // answers as REST's /v2/models/{m}/config and /v2/models[/{m}]/stats.
  grpc::ServerUnaryReactor* ModelConfig(grpc::CallbackServerContext* context,
                                        const inference::ModelConfigRequest* request,
                                        inference::ModelConfigResponse* response) override;
  grpc::ServerUnaryReactor* ModelStatistics(grpc::CallbackServerContext* context,
                                            const inference::ModelStatisticsRequest* request,
                                            inference::ModelStatisticsResponse* response) override;

 private:
  ModelRepository& models_;
  kserve::SharedMemoryRegistry* shm_;
  Admission& admission_;
};

}  // namespace tessera
