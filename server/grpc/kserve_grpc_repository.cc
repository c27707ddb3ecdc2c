// KServe v2's model repository extension over gRPC, as Triton's GRPCInferenceService has it:
// RepositoryIndex, RepositoryModelLoad, RepositoryModelUnload. The same ModelRepository calls as
// REST's /v2/repository/* (kserve_routes.cc) and tessera.v1's GetModelIndex/LoadModel/UnloadModel.
// tesserad has one repository (--models): a repository_name other than "" is UNIMPLEMENTED, as
// Triton answers it. A load returns once it started (the index says LOADING, then READY or why
// UNAVAILABLE); Triton's returns when the model is ready.
#include <string>
#include <string_view>

#include "server/grpc/finish_unary.h"
#include "server/grpc/kserve_grpc_service.h"
#include "server/grpc/status_mapping.h"
#include "server/models/model_repository.h"

namespace tessera {

namespace {

// UNIMPLEMENTED for a repository other than "" (tesserad has one, --models).
Status check_repository_name(const std::string& name) {
  if (name.empty()) return Status::ok();
  return Status::unimplemented("repository_name '" + name +
                               "': tesserad serves one repository (--models); leave it empty");
}

// What a load or unload request may not ask: another repository, no model, or parameters
// tesserad does not take (a model's folder and its model.toml say how it loads). Triton's
// `unload_dependents` is accepted on unload and changes nothing: no model depends on another.
template <typename Request>
Status check_repository_request(const Request& request, std::string_view allowed_parameter = "") {
  TESSERA_RETURN_IF_ERROR(check_repository_name(request.repository_name()));
  if (request.model_name().empty()) return Status::invalid_argument("model_name is empty; name the model");
  for (const auto& [key, value] : request.parameters()) {
    if (key != allowed_parameter) {
      return Status::invalid_argument("parameter '" + key +
                                      "' is not supported: the model's folder and model.toml say how it loads");
    }
  }
  return Status::ok();
}

}  // namespace

grpc::ServerUnaryReactor* KserveGrpcService::RepositoryIndex(grpc::CallbackServerContext* context,
                                                             const inference::RepositoryIndexRequest* request,
                                                             inference::RepositoryIndexResponse* response) {
  if (Status bad = check_repository_name(request->repository_name()); !bad.is_ok()) {
    return finish_unary(context, to_grpc_status(bad));
  }
  for (const ModelIndexEntry& row : models_.index()) {
    if (request->ready() && row.state != "READY") continue;
    inference::RepositoryIndexResponse::ModelIndex* entry = response->add_models();
    entry->set_name(row.name);
    entry->set_version(row.version);
    entry->set_state(row.state);
    entry->set_reason(row.reason);
  }
  return finish_unary(context, grpc::Status::OK);
}

grpc::ServerUnaryReactor* KserveGrpcService::RepositoryModelLoad(grpc::CallbackServerContext* context,
                                                                 const inference::RepositoryModelLoadRequest* request,
                                                                 inference::RepositoryModelLoadResponse* /*response*/) {
  if (Status bad = check_repository_request(*request); !bad.is_ok()) return finish_unary(context, to_grpc_status(bad));
  return finish_unary(context, to_grpc_status(models_.load_model(request->model_name())));
}

grpc::ServerUnaryReactor* KserveGrpcService::RepositoryModelUnload(
    grpc::CallbackServerContext* context, const inference::RepositoryModelUnloadRequest* request,
    inference::RepositoryModelUnloadResponse* /*response*/) {
  if (Status bad = check_repository_request(*request, "unload_dependents"); !bad.is_ok()) {
    return finish_unary(context, to_grpc_status(bad));
  }
  return finish_unary(context, to_grpc_status(models_.unload_model(request->model_name())));
}

}  // namespace tessera
