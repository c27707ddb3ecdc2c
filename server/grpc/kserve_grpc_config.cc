// Triton's model configuration and statistics extensions over gRPC: ModelConfig answers a served
// version's ModelConfig (model_config.h), ModelStatistics the counters of the versions asked for
// (statistics.h). Both answer inline; an unknown model or version is NOT_FOUND.
#include "server/grpc/finish_unary.h"
#include "server/grpc/kserve_grpc_service.h"
#include "server/grpc/status_mapping.h"
#include "server/kserve/kserve_model.h"
#include "server/kserve/statistics.h"
#include "server/kserve/triton_model_config.h"
#include "server/models/model_repository.h"

namespace tessera {

using kserve::find_model;
using kserve::make_triton_model_config;
using kserve::model_statistics;

grpc::ServerUnaryReactor* KserveGrpcService::ModelConfig(grpc::CallbackServerContext* context,
                                                         const inference::ModelConfigRequest* request,
                                                         inference::ModelConfigResponse* response) {
  auto model = find_model(models_, request->name(), request->version());
  if (!model) return finish_unary(context, to_grpc_status(model.status()));
  *response->mutable_config() = make_triton_model_config(*model->served);
  return finish_unary(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* KserveGrpcService::ModelStatistics(grpc::CallbackServerContext* context,
                                                             const inference::ModelStatisticsRequest* request,
                                                             inference::ModelStatisticsResponse* response) {
  auto stats = model_statistics(models_, request->name(), request->version());
  if (!stats) return finish_unary(context, to_grpc_status(stats.status()));
  *response = std::move(stats).value();
  return finish_unary(context, grpc::Status::OK);
}

}  // namespace tessera
