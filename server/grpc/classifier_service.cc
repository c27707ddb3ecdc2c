#include "server/grpc/classifier_service.h"

#include <algorithm>
#include <string>
#include <utility>

#include "server/grpc/classify_messages.h"
#include "server/grpc/classify_stream.h"
#include "server/grpc/status_mapping.h"
#include "server/models/model_repository.h"

namespace tessera {

ClassifierService::ClassifierService(ModelRepository& models, Admission& admission)
    : models_(models), admission_(admission) {}

grpc::ServerUnaryReactor* ClassifierService::Classify(grpc::CallbackServerContext* context,
                                                      const v1::ClassifyRequest* request,
                                                      v1::ClassifyResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  // The call keeps `request` until it is finished, so the job may point into it.
  Admitted admitted = admission_.admit(admission_request(context, *request, "grpc"));
  if (!admitted) {
    reactor->Finish(to_grpc_status(admitted.status()));
    return reactor;
  }
  response->set_model(admitted->model->name());
  response->set_model_version(admitted->model->version);
  response->set_request_id(admitted.request_id());
  admitted->done = [reactor, response](Result<ClassifyResult> result) {
    if (result) fill_response(*result, *response);
    reactor->Finish(result ? grpc::Status::OK : to_grpc_status(result.status()));
  };
  admission_.submit(std::move(admitted));
  return reactor;
}

grpc::ServerBidiReactor<v1::ClassifyRequest, v1::ClassifyResponse>* ClassifierService::ClassifyStream(
    grpc::CallbackServerContext* context) {
  return new ClassifyStreamReactor(admission_, context);
}

grpc::ServerUnaryReactor* ClassifierService::ListModels(grpc::CallbackServerContext* context,
                                                        const v1::ListModelsRequest* /*request*/,
                                                        v1::ListModelsResponse* response) {
  // The default model's versions first (in version order), as the protocol promises.
  auto served = models_.models();
  const std::string default_name = models_.default_name();
  std::stable_partition(served.begin(), served.end(), [&](const auto& m) { return m->name() == default_name; });
  for (const auto& model : served) {
    const ModelConfig& config = model->config();
    v1::ModelInfo* info = response->add_models();
    info->set_name(config.name);
    info->set_format(config.format);
    info->set_input_width(static_cast<uint32_t>(config.input.width));
    info->set_input_height(static_cast<uint32_t>(config.input.height));
    info->set_input_channels(static_cast<uint32_t>(config.input.channels));
    for (const std::string& label : config.labels) info->add_labels(label);
    info->set_precision(model->precision);
    info->set_device(model->device);
    info->set_version(model->version);
    for (unsigned device : model->devices) info->add_devices(device);
    if (const plan::Placement* placement = model->engine->placement()) {
      v1::ModelPlacement* p = info->mutable_placement();
      p->set_fabric_mac_share(placement->fabric_mac_share());
      p->set_fabric_segments(static_cast<uint32_t>(placement->fabric_segments));
      p->set_handovers(static_cast<uint32_t>(placement->handovers));
      p->set_summary(placement->line());
    }
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* ClassifierService::GetModelIndex(grpc::CallbackServerContext* context,
                                                           const v1::ModelIndexRequest* /*request*/,
                                                           v1::ModelIndexResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  for (const ModelIndexEntry& row : models_.index()) {
    v1::ModelIndexEntry* entry = response->add_models();
    entry->set_name(row.name);
    entry->set_version(row.version);
    entry->set_state(row.state);
    entry->set_reason(row.reason);
  }
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* ClassifierService::LoadModel(grpc::CallbackServerContext* context,
                                                       const v1::LoadModelRequest* request,
                                                       v1::LoadModelResponse* /*response*/) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (request->name().empty()) {
    reactor->Finish(to_grpc_status(Status::invalid_argument("name is empty; name the model to load")));
  } else {
    reactor->Finish(to_grpc_status(models_.load_model(request->name())));
  }
  return reactor;
}

grpc::ServerUnaryReactor* ClassifierService::UnloadModel(grpc::CallbackServerContext* context,
                                                         const v1::UnloadModelRequest* request,
                                                         v1::UnloadModelResponse* /*response*/) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(to_grpc_status(models_.unload_model(request->name())));
  return reactor;
}

}  // namespace tessera
