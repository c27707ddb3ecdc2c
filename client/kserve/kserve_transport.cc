#include "client/kserve/kserve_transport.h"

#include <nlohmann/json.hpp>

#include "client/kserve/http_connection.h"

namespace tessera::client::kserve {
namespace {

using nlohmann::json;
namespace http = boost::beast::http;

// Metadata calls are quick; a server that takes longer is not answering.
constexpr std::chrono::seconds kMetadataTimeout{10};

grpc::Status invalid(const Status& status) { return {static_cast<grpc::StatusCode>(status.code()), status.message()}; }

class GrpcTransport : public KserveTransport {
 public:
  GrpcTransport(const Connection& connection, std::shared_ptr<grpc::Channel> channel)
      : connection_(connection), stub_(inference::GRPCInferenceService::NewStub(std::move(channel))) {}

  grpc::Status server_name(std::string& name) override {
    grpc::ClientContext context;
    prepare_context(context, connection_, kMetadataTimeout);
    inference::ServerMetadataResponse response;
    grpc::Status status = stub_->ServerMetadata(&context, inference::ServerMetadataRequest(), &response);
    name = response.name();
    return status;
  }

  grpc::Status first_ready_model(std::string& model) override {
    grpc::ClientContext context;
    prepare_context(context, connection_, kMetadataTimeout);
    inference::RepositoryIndexRequest request;
    request.set_ready(true);
    inference::RepositoryIndexResponse response;
    grpc::Status status = stub_->RepositoryIndex(&context, request, &response);
    if (!status.ok()) return status;
    for (const auto& m : response.models()) {
      if (m.state() == "READY") {
        model = m.name();
        return grpc::Status::OK;
      }
    }
    return {grpc::StatusCode::NOT_FOUND, "the repository index lists no READY model"};
  }

  grpc::Status model_metadata(const std::string& model, const std::string& version,
                              inference::ModelMetadataResponse& metadata) override {
    grpc::ClientContext context;
    prepare_context(context, connection_, kMetadataTimeout);
    inference::ModelMetadataRequest request;
    request.set_name(model);
    request.set_version(version);
    return stub_->ModelMetadata(&context, request, &metadata);
  }

  grpc::Status infer(const InferSpec& spec, std::chrono::microseconds timeout, InferAnswer& answer) override {
    grpc::ClientContext context;
    prepare_context(context, connection_, timeout);
    inference::ModelInferResponse response;
    grpc::Status status = stub_->ModelInfer(&context, grpc_request(spec), &response);
    if (!status.ok()) return status;
    auto read = grpc_answer(response, spec.output_name);
    if (!read) return invalid(read.status());
    answer = std::move(read).value();
    return grpc::Status::OK;
  }

 private:
  Connection connection_;
  std::unique_ptr<inference::GRPCInferenceService::Stub> stub_;
};

class HttpTransport : public KserveTransport {
 public:
  HttpTransport(const Connection& connection, HttpTensorFormat format, std::string host, std::string port)
      : format_(format), connection_(std::move(host), std::move(port), connection.token) {}

  grpc::Status server_name(std::string& name) override {
    json body;
    grpc::Status status = get_json(http::verb::get, "/v2", body);
    if (status.ok()) name = body.value("name", "");
    return status;
  }

  grpc::Status first_ready_model(std::string& model) override {
    json body;
    grpc::Status status = get_json(http::verb::post, "/v2/repository/index", body);
    if (!status.ok()) return status;
    if (body.is_array()) {
      for (const json& m : body) {
        if (m.is_object() && m.value("state", "") == "READY" && m.contains("name")) {
          model = m["name"].get<std::string>();
          return grpc::Status::OK;
        }
      }
    }
    return {grpc::StatusCode::NOT_FOUND, "the repository index lists no READY model"};
  }

  grpc::Status model_metadata(const std::string& model, const std::string& version,
                              inference::ModelMetadataResponse& metadata) override {
    json body;
    grpc::Status status = get_json(http::verb::get, model_path(model, version), body);
    if (!status.ok()) return status;
    return read_metadata(body, metadata);
  }

  grpc::Status infer(const InferSpec& spec, std::chrono::microseconds timeout, InferAnswer& answer) override {
    const HttpBody body = http_request(spec, format_.binary_input, format_.binary_output);
    HttpAnswer reply;
    grpc::Status status = connection_.request(http::verb::post, model_path(spec.model, spec.version) + "/infer",
                                              body.bytes, body.header_length, timeout, reply);
    if (!status.ok()) return status;
    if (reply.status != 200) return {code_of_http_status(reply.status), http_error_message(reply.body)};
    auto read = http_answer(reply.body, reply.header_length, spec.output_name);
    if (!read) return invalid(read.status());
    answer = std::move(read).value();
    return grpc::Status::OK;
  }

 private:
  static std::string model_path(const std::string& model, const std::string& version) {
    std::string path = "/v2/models/" + model;
    if (!version.empty()) path += "/versions/" + version;
    return path;
  }

  grpc::Status get_json(http::verb method, const std::string& target, json& body) {
    HttpAnswer reply;
    grpc::Status status = connection_.request(method, target, method == http::verb::post ? "{}" : "", std::nullopt,
                                              kMetadataTimeout, reply);
    if (!status.ok()) return status;
    if (reply.status != 200) return {code_of_http_status(reply.status), http_error_message(reply.body)};
    body = json::parse(reply.body, nullptr, false);
    if (body.is_discarded()) return {grpc::StatusCode::INTERNAL, target + ": the answer is not JSON"};
    return grpc::Status::OK;
  }

  // The JSON model metadata in its protobuf form.
  static grpc::Status read_metadata(const json& body, inference::ModelMetadataResponse& metadata) {
    if (!body.is_object()) return {grpc::StatusCode::INTERNAL, "model metadata is not a JSON object"};
    metadata.set_name(body.value("name", ""));
    metadata.set_platform(body.value("platform", ""));
    for (const char* key : {"inputs", "outputs"}) {
      if (!body.contains(key) || !body[key].is_array()) continue;
      for (const json& t : body[key]) {
        if (!t.is_object()) continue;
        auto* out = std::string(key) == "inputs" ? metadata.add_inputs() : metadata.add_outputs();
        out->set_name(t.value("name", ""));
        out->set_datatype(t.value("datatype", ""));
        if (t.contains("shape") && t["shape"].is_array())
          for (const json& d : t["shape"])
            if (d.is_number_integer()) out->add_shape(d.get<int64_t>());
      }
    }
    return grpc::Status::OK;
  }

  HttpTensorFormat format_;
  HttpConnection connection_;
};

}  // namespace

std::unique_ptr<KserveTransport> make_grpc_transport(const Connection& connection,
                                                     std::shared_ptr<grpc::Channel> channel) {
  return std::make_unique<GrpcTransport>(connection, std::move(channel));
}

std::unique_ptr<KserveTransport> make_http_transport(const Connection& connection, HttpTensorFormat format) {
  std::string host, port;
  split_host_port(connection.server, host, port);
  return std::make_unique<HttpTransport>(connection, format, std::move(host), std::move(port));
}

grpc::StatusCode code_of_http_status(unsigned status) {
  switch (status) {
    case 400: return grpc::StatusCode::INVALID_ARGUMENT;
    case 401: return grpc::StatusCode::UNAUTHENTICATED;
    case 403: return grpc::StatusCode::PERMISSION_DENIED;
    case 404: return grpc::StatusCode::NOT_FOUND;
    case 409: return grpc::StatusCode::ALREADY_EXISTS;
    case 413:  // payload too large
    case 429: return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case 499: return grpc::StatusCode::CANCELLED;
    case 501: return grpc::StatusCode::UNIMPLEMENTED;
    case 503: return grpc::StatusCode::UNAVAILABLE;
    case 504: return grpc::StatusCode::DEADLINE_EXCEEDED;
    default: return status >= 500 ? grpc::StatusCode::INTERNAL : grpc::StatusCode::UNKNOWN;
  }
}

bool split_host_port(const std::string& address, std::string& host, std::string& port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon + 1 == address.size()) return false;
  host = address.substr(0, colon);
  port = address.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return !host.empty();
}

}  // namespace tessera::client::kserve
