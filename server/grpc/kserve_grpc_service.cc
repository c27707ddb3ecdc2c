#include "server/grpc/kserve_grpc_service.h"

#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "server/batching/admission.h"
#include "server/batching/inference_queue.h"
#include "server/grpc/finish_unary.h"
#include "server/grpc/kserve_stream_infer.h"
#include "server/grpc/status_mapping.h"
#include "server/kserve/decode_grpc.h"
#include "server/kserve/infer_response.h"
#include "server/kserve/kserve_model.h"
#include "server/kserve/metadata.h"
#include "server/kserve/model_infer.h"
#include "server/models/model_repository.h"

namespace tessera {

using kserve::decode_infer_request;
using kserve::find_model;
using kserve::ImageScores;
using kserve::InferSubmitted;
using kserve::make_infer_response;
using kserve::make_model_metadata;
using kserve::make_server_metadata;
using kserve::model_infer;
using kserve::ModelInferCall;
using kserve::ModelSignature;
using kserve::PendingInfer;
using kserve::server_version;
using kserve::SharedMemoryRegistry;
using kserve::ShmRequest;

namespace {

constexpr const char* kUnaryVia = "kserve-grpc";

}  // namespace

KserveGrpcService::KserveGrpcService(ModelRepository& models, Admission& admission, SharedMemoryRegistry* shm)
    : models_(models), shm_(shm), admission_(admission) {}

grpc::ServerUnaryReactor* KserveGrpcService::ServerLive(grpc::CallbackServerContext* context,
                                                        const inference::ServerLiveRequest* /*request*/,
                                                        inference::ServerLiveResponse* response) {
  response->set_live(true);
  return finish_unary(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* KserveGrpcService::ServerReady(grpc::CallbackServerContext* context,
                                                         const inference::ServerReadyRequest* /*request*/,
                                                         inference::ServerReadyResponse* response) {
  response->set_ready(!admission_.in_flight().draining() && models_.device_ready().is_ok());
  return finish_unary(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* KserveGrpcService::ModelReady(grpc::CallbackServerContext* context,
                                                        const inference::ModelReadyRequest* request,
                                                        inference::ModelReadyResponse* response) {
  auto model = find_model(models_, request->name(), request->version());
  if (!model) return finish_unary(context, to_grpc_status(model.status()));
  response->set_ready(!admission_.in_flight().draining() && models_.device_ready().is_ok());
  return finish_unary(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* KserveGrpcService::ServerMetadata(grpc::CallbackServerContext* context,
                                                            const inference::ServerMetadataRequest* /*request*/,
                                                            inference::ServerMetadataResponse* response) {
  *response = make_server_metadata(server_version(), shm_ != nullptr && shm_->allowed());
  return finish_unary(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* KserveGrpcService::ModelMetadata(grpc::CallbackServerContext* context,
                                                           const inference::ModelMetadataRequest* request,
                                                           inference::ModelMetadataResponse* response) {
  auto model = find_model(models_, request->name(), request->version());
  if (!model) return finish_unary(context, to_grpc_status(model.status()));
  *response = make_model_metadata(model->signature);
  return finish_unary(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* KserveGrpcService::ModelInfer(grpc::CallbackServerContext* context,
                                                        const inference::ModelInferRequest* request,
                                                        inference::ModelInferResponse* response) {
  AdmissionRequest admission;
  admission.via = kUnaryVia;
  admission.model = request->model_name();
  admission.version = request->model_version();
  admission.request_id = request->id();
  admission.id_rule = RequestIdRule::kReplace;
  admission.bytes = request->ByteSizeLong();
  admission.deadline = steady_deadline(context->deadline());
  admission.cancelled = [context] { return context->IsCancelled(); };

  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  ModelInferCall call;
  call.base = std::move(admission);
  call.shm = shm_;
  call.decode = [request](const ModelSignature& model, const DecodeLimits& limits, ShmRequest* shm) {
    return decode_infer_request(*request, model, limits, shm);
  };
  call.answer = [reactor, response](const std::string& /*request_id*/, const PendingInfer& pending,
                                    Result<ImageScores> scores) {
    if (scores) *response = make_infer_response(pending.request, pending.model.signature, *scores);
    reactor->Finish(to_grpc_status(scores.status()));
  };
  const InferSubmitted submitted = model_infer(models_, admission_, std::move(call));
  if (!submitted.status.is_ok()) reactor->Finish(to_grpc_status(submitted.status));
  return reactor;
}

grpc::ServerBidiReactor<inference::ModelInferRequest, inference::ModelStreamInferResponse>*
KserveGrpcService::ModelStreamInfer(grpc::CallbackServerContext* context) {
  return new StreamInferReactor(models_, admission_, shm_, context);
}

}  // namespace tessera
