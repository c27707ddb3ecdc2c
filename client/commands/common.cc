#include "client/commands/common.h"

namespace tessera::client {

std::unique_ptr<v1::Classifier::Stub> make_stub(const std::string& server) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  return v1::Classifier::NewStub(
      grpc::CreateCustomChannel(server, grpc::InsecureChannelCredentials(), args));
}

const char* grpc_code_name(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return "OK";
    case grpc::StatusCode::CANCELLED: return "CANCELLED";
    case grpc::StatusCode::UNKNOWN: return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED: return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE: return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL: return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS: return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    default: return "UNKNOWN";
  }
}

nlohmann::json to_json(const v1::ClassifyResponse& response) {
  nlohmann::json classes = nlohmann::json::array();
  for (const v1::Class& c : response.classes()) {
    classes.push_back({{"index", c.index()}, {"label", c.label()}, {"score", c.score()}});
  }
  const v1::Timing& t = response.timing();
  return {{"model", response.model()},
          {"request_id", response.request_id()},
          {"classes", std::move(classes)},
          {"timing",
           {{"decode_us", t.decode_us()},
            {"queue_us", t.queue_us()},
            {"inference_us", t.inference_us()},
            {"total_us", t.total_us()},
            {"fabric_us", t.fabric_us()},
            {"host_us", t.host_us()},
            {"modeled_fabric_us", t.modeled_fabric_us()}}}};
}

nlohmann::json to_json(const v1::ModelInfo& model) {
  return {{"name", model.name()},
          {"format", model.format()},
          {"input",
           {{"width", model.input_width()},
            {"height", model.input_height()},
            {"channels", model.input_channels()}}},
          {"labels", std::vector<std::string>(model.labels().begin(), model.labels().end())},
          {"precision", model.precision()},
          {"device", model.device()}};
}

nlohmann::json error_json(const grpc::Status& status) {
  return {{"code", grpc_code_name(status.error_code())}, {"message", status.error_message()}};
}

}  // namespace tessera::client
