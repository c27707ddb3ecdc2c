#include "server/grpc/classifier_service.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <spdlog/spdlog.h>

#include <utility>

#include "server/auth/grpc_auth.h"
#include "server/batching/inference_queue.h"
#include "server/batching/request_id.h"
#include "server/batching/request_log.h"
#include "server/grpc/classify_stream.h"
#include "server/grpc/status_mapping.h"
#include "server/models/model_repository.h"

namespace tessera {

void fill_response(const ClassifyResult& result, v1::ClassifyResponse& response) {
  for (const ScoredClass& scored : result.classes) {
    v1::Class* out = response.add_classes();
    out->set_index(static_cast<uint32_t>(scored.index));
    out->set_label(scored.label);
    out->set_score(scored.score);
  }
  v1::Timing* timing = response.mutable_timing();
  timing->set_decode_us(result.timing.decode_us);
  timing->set_queue_us(result.timing.queue_us);
  timing->set_inference_us(result.timing.inference_us);
  timing->set_total_us(result.timing.total_us);
  timing->set_fabric_us(result.timing.fabric_us);
  timing->set_host_us(result.timing.host_us);
  timing->set_modeled_fabric_us(result.timing.modeled_fabric_us);
  timing->set_batch_size(result.batch_size);
  timing->set_modeled_energy_uj(result.energy_uj);
}

ClassifierService::ClassifierService(const ModelRepository& models, InferenceQueue& queue, int64_t max_image_bytes,
                                     const BearerTokens* tokens)
    : models_(models), queue_(queue), max_image_bytes_(max_image_bytes), tokens_(tokens) {}

Result<InferenceJob> ClassifierService::prepare_job(grpc::CallbackServerContext* context,
                                                    const v1::ClassifyRequest& request, const char* via,
                                                    std::string& request_id) {
  // A bad caller id is refused, but logged under one of ours.
  const bool id_ok = request.request_id().empty() || is_valid_request_id(request.request_id());
  request_id = request.request_id().empty() || !id_ok ? make_request_id() : request.request_id();
  const std::string& image = request.image();
  auto refuse = [&](const Status& status) -> Result<InferenceJob> {
    log_request_failed(via, request_id, request.model(), image.size(), status);
    return status;
  };
  if (!id_ok) {
    return refuse(Status::invalid_argument("request_id must be 1..128 printable characters without spaces"));
  }
  const ServedModel* model = models_.find(request.model());
  if (model == nullptr) return refuse(Status::not_found("no model named '" + request.model() + "'"));
  if (image.empty()) return refuse(Status::invalid_argument("image is empty"));
  if (static_cast<int64_t>(image.size()) > max_image_bytes_) {
    return refuse(Status::invalid_argument("image is " + std::to_string(image.size()) + " bytes; the limit is " +
                                           std::to_string(max_image_bytes_)));
  }
  InferenceJob job;
  job.model = model;
  // The caller keeps `request` until the job is answered.
  job.input = EncodedImage{{reinterpret_cast<const uint8_t*>(image.data()), image.size()}};
  job.top_k = effective_top_k(request.top_k(), model->num_classes());
  job.request_id = request_id;
  job.via = via;
  job.deadline = steady_deadline(context->deadline());
  job.cancelled = [context] { return context->IsCancelled(); };
  return job;
}

grpc::ServerUnaryReactor* ClassifierService::Classify(grpc::CallbackServerContext* context,
                                                      const v1::ClassifyRequest* request,
                                                      v1::ClassifyResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (auto refused = check_token(*context)) {
    reactor->Finish(*refused);
    return reactor;
  }
  std::string request_id;
  Result<InferenceJob> job = prepare_job(context, *request, "grpc", request_id);
  if (!job) {
    reactor->Finish(to_grpc_status(job.status()));
    return reactor;
  }
  if (!in_flight_.try_begin()) {
    const Status status = Status::unavailable("the server is shutting down");
    log_request_failed("grpc", request_id, request->model(), request->image().size(), status);
    reactor->Finish(to_grpc_status(status));
    return reactor;
  }
  response->set_model(job->model->name());
  response->set_request_id(request_id);
  job->done = [this, reactor, response](Result<ClassifyResult> result) {
    if (result) fill_response(*result, *response);
    reactor->Finish(result ? grpc::Status::OK : to_grpc_status(result.status()));
    in_flight_.end();
  };
  queue_.submit(std::move(job).value());
  return reactor;
}

grpc::ServerBidiReactor<v1::ClassifyRequest, v1::ClassifyResponse>* ClassifierService::ClassifyStream(
    grpc::CallbackServerContext* context) {
  return new ClassifyStreamReactor(*this, context);
}

std::optional<grpc::Status> ClassifierService::check_token(const grpc::CallbackServerContext& context) const {
  return check_grpc_bearer(context, tokens_);
}

grpc::ServerUnaryReactor* ClassifierService::ListModels(grpc::CallbackServerContext* context,
                                                        const v1::ListModelsRequest* /*request*/,
                                                        v1::ListModelsResponse* response) {
  if (auto refused = check_token(*context)) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(*refused);
    return reactor;
  }
  for (const auto& model : models_.models()) {
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
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

std::string join_host_port(const std::string& host, int port) {
  if (host.find(':') != std::string::npos && host.front() != '[') {
    return "[" + host + "]:" + std::to_string(port);
  }
  return host + ":" + std::to_string(port);
}

Result<std::unique_ptr<GrpcServer>> GrpcServer::start(const GrpcServerOptions& options,
                                                      const std::vector<grpc::Service*>& services) {
  const std::string address = join_host_port(options.host, options.port);
  // grpc.health.v1.Health (SERVING until drain) and server reflection (grpcurl, Postman, ...):
  // both process-wide switches read when the builder builds.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int bound_port = 0;
  builder.AddListeningPort(address, options.credentials ? options.credentials : grpc::InsecureServerCredentials(),
                           &bound_port);
  builder.SetMaxReceiveMessageSize(options.max_receive_bytes);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, options.max_concurrent_streams);
  // Without this a second daemon on the same port would silently share it (SO_REUSEPORT).
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  for (grpc::Service* service : services) builder.RegisterService(service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || bound_port == 0) {
    return Status::unavailable("gRPC cannot listen on " + address + " (is the port in use?)");
  }
  std::unique_ptr<GrpcServer> grpc_server(new GrpcServer(std::move(server), bound_port, options.health_services));
  grpc_server->set_serving(true);
  return grpc_server;
}

void GrpcServer::set_serving(bool serving) {
  if (grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService()) {
    for (const std::string& name : health_services_) health->SetServingStatus(name, serving);
    health->SetServingStatus(serving);
  }
}

GrpcServer::~GrpcServer() { shutdown(std::chrono::milliseconds(0)); }

void GrpcServer::shutdown(std::chrono::milliseconds grace) {
  if (shut_down_) return;
  shut_down_ = true;
  server_->Shutdown(std::chrono::system_clock::now() + grace);
  server_->Wait();
}

}  // namespace tessera
