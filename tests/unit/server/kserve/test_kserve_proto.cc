// The KServe v2 proto (proto/kserve/grpc_predict_v2.proto) against upstream: field numbers and
// types, parameter maps, the oneof and the service's methods, from the compiled descriptors.
#include <google/protobuf/descriptor.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "kserve/grpc_predict_v2.pb.h"

namespace tessera::kserve {
namespace {

// The proto against upstream. Written down from KServe's grpc_predict_v2.proto
// (kserve/kserve docs/predict-api/v2/ and python/kserve/kserve/protocol/grpc/) and, for
// InferParameter's fields 4 and 5, Triton's grpc_service.proto (triton-inference-server/common
// protobuf/). Checked against the descriptor protoc compiled into this binary, so a renumbered
// or retyped field fails here.

struct UpstreamField {
  const char* message;
  const char* field;
  int number;
  google::protobuf::FieldDescriptor::Type type;
  bool repeated;
};

using FD = google::protobuf::FieldDescriptor;
const UpstreamField kUpstreamFields[] = {
    {"ServerLiveResponse", "live", 1, FD::TYPE_BOOL, false},
    {"ServerReadyResponse", "ready", 1, FD::TYPE_BOOL, false},
    {"ModelReadyRequest", "name", 1, FD::TYPE_STRING, false},
    {"ModelReadyRequest", "version", 2, FD::TYPE_STRING, false},
    {"ModelReadyResponse", "ready", 1, FD::TYPE_BOOL, false},
    {"ServerMetadataResponse", "name", 1, FD::TYPE_STRING, false},
    {"ServerMetadataResponse", "version", 2, FD::TYPE_STRING, false},
    {"ServerMetadataResponse", "extensions", 3, FD::TYPE_STRING, true},
    {"ModelMetadataRequest", "name", 1, FD::TYPE_STRING, false},
    {"ModelMetadataRequest", "version", 2, FD::TYPE_STRING, false},
    {"ModelMetadataResponse", "name", 1, FD::TYPE_STRING, false},
    {"ModelMetadataResponse", "versions", 2, FD::TYPE_STRING, true},
    {"ModelMetadataResponse", "platform", 3, FD::TYPE_STRING, false},
    {"ModelMetadataResponse", "inputs", 4, FD::TYPE_MESSAGE, true},
    {"ModelMetadataResponse", "outputs", 5, FD::TYPE_MESSAGE, true},
    {"ModelMetadataResponse.TensorMetadata", "name", 1, FD::TYPE_STRING, false},
    {"ModelMetadataResponse.TensorMetadata", "datatype", 2, FD::TYPE_STRING, false},
    {"ModelMetadataResponse.TensorMetadata", "shape", 3, FD::TYPE_INT64, true},
    {"ModelInferRequest", "model_name", 1, FD::TYPE_STRING, false},
    {"ModelInferRequest", "model_version", 2, FD::TYPE_STRING, false},
    {"ModelInferRequest", "id", 3, FD::TYPE_STRING, false},
    {"ModelInferRequest", "parameters", 4, FD::TYPE_MESSAGE, true},
    {"ModelInferRequest", "inputs", 5, FD::TYPE_MESSAGE, true},
    {"ModelInferRequest", "outputs", 6, FD::TYPE_MESSAGE, true},
    {"ModelInferRequest", "raw_input_contents", 7, FD::TYPE_BYTES, true},
    {"ModelInferRequest.InferInputTensor", "name", 1, FD::TYPE_STRING, false},
    {"ModelInferRequest.InferInputTensor", "datatype", 2, FD::TYPE_STRING, false},
    {"ModelInferRequest.InferInputTensor", "shape", 3, FD::TYPE_INT64, true},
    {"ModelInferRequest.InferInputTensor", "parameters", 4, FD::TYPE_MESSAGE, true},
    {"ModelInferRequest.InferInputTensor", "contents", 5, FD::TYPE_MESSAGE, false},
    {"ModelInferRequest.InferRequestedOutputTensor", "name", 1, FD::TYPE_STRING, false},
    {"ModelInferRequest.InferRequestedOutputTensor", "parameters", 2, FD::TYPE_MESSAGE, true},
    {"ModelInferResponse", "model_name", 1, FD::TYPE_STRING, false},
    {"ModelInferResponse", "model_version", 2, FD::TYPE_STRING, false},
    {"ModelInferResponse", "id", 3, FD::TYPE_STRING, false},
    {"ModelInferResponse", "parameters", 4, FD::TYPE_MESSAGE, true},
    {"ModelInferResponse", "outputs", 5, FD::TYPE_MESSAGE, true},
    {"ModelInferResponse", "raw_output_contents", 6, FD::TYPE_BYTES, true},
    {"ModelInferResponse.InferOutputTensor", "name", 1, FD::TYPE_STRING, false},
    {"ModelInferResponse.InferOutputTensor", "datatype", 2, FD::TYPE_STRING, false},
    {"ModelInferResponse.InferOutputTensor", "shape", 3, FD::TYPE_INT64, true},
    {"ModelInferResponse.InferOutputTensor", "parameters", 4, FD::TYPE_MESSAGE, true},
    {"ModelInferResponse.InferOutputTensor", "contents", 5, FD::TYPE_MESSAGE, false},
    {"InferParameter", "bool_param", 1, FD::TYPE_BOOL, false},
    {"InferParameter", "int64_param", 2, FD::TYPE_INT64, false},
    {"InferParameter", "string_param", 3, FD::TYPE_STRING, false},
    {"InferParameter", "double_param", 4, FD::TYPE_DOUBLE, false},
    {"InferParameter", "uint64_param", 5, FD::TYPE_UINT64, false},
    {"InferTensorContents", "bool_contents", 1, FD::TYPE_BOOL, true},
    {"InferTensorContents", "int_contents", 2, FD::TYPE_INT32, true},
    {"InferTensorContents", "int64_contents", 3, FD::TYPE_INT64, true},
    {"InferTensorContents", "uint_contents", 4, FD::TYPE_UINT32, true},
    {"InferTensorContents", "uint64_contents", 5, FD::TYPE_UINT64, true},
    {"InferTensorContents", "fp32_contents", 6, FD::TYPE_FLOAT, true},
    {"InferTensorContents", "fp64_contents", 7, FD::TYPE_DOUBLE, true},
    {"InferTensorContents", "bytes_contents", 8, FD::TYPE_BYTES, true},
    // The repository extension, as Triton's grpc_service.proto numbers it.
    {"ModelRepositoryParameter", "bool_param", 1, FD::TYPE_BOOL, false},
    {"ModelRepositoryParameter", "int64_param", 2, FD::TYPE_INT64, false},
    {"ModelRepositoryParameter", "string_param", 3, FD::TYPE_STRING, false},
    {"ModelRepositoryParameter", "bytes_param", 4, FD::TYPE_BYTES, false},
    {"RepositoryIndexRequest", "repository_name", 1, FD::TYPE_STRING, false},
    {"RepositoryIndexRequest", "ready", 2, FD::TYPE_BOOL, false},
    {"RepositoryIndexResponse", "models", 1, FD::TYPE_MESSAGE, true},
    {"RepositoryIndexResponse.ModelIndex", "name", 1, FD::TYPE_STRING, false},
    {"RepositoryIndexResponse.ModelIndex", "version", 2, FD::TYPE_STRING, false},
    {"RepositoryIndexResponse.ModelIndex", "state", 3, FD::TYPE_STRING, false},
    {"RepositoryIndexResponse.ModelIndex", "reason", 4, FD::TYPE_STRING, false},
    {"RepositoryModelLoadRequest", "repository_name", 1, FD::TYPE_STRING, false},
    {"RepositoryModelLoadRequest", "model_name", 2, FD::TYPE_STRING, false},
    {"RepositoryModelLoadRequest", "parameters", 3, FD::TYPE_MESSAGE, true},
    {"RepositoryModelUnloadRequest", "repository_name", 1, FD::TYPE_STRING, false},
    {"RepositoryModelUnloadRequest", "model_name", 2, FD::TYPE_STRING, false},
    {"RepositoryModelUnloadRequest", "parameters", 3, FD::TYPE_MESSAGE, true},
};

const google::protobuf::Descriptor* find_message(const std::string& name) {
  // Force the file's registration, then look the message up by its full name.
  (void)inference::ModelInferRequest::descriptor();
  return google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName("inference." + name);
}

TEST(KserveProto, FieldNumbersAreUpstream) {
  for (const UpstreamField& u : kUpstreamFields) {
    SCOPED_TRACE(std::string(u.message) + "." + u.field);
    const auto* message = find_message(u.message);
    ASSERT_NE(message, nullptr);
    const auto* field = message->FindFieldByName(u.field);
    ASSERT_NE(field, nullptr);
    EXPECT_EQ(field->number(), u.number);
    EXPECT_EQ(field->type(), u.type);
    EXPECT_EQ(field->is_repeated(), u.repeated);
  }
}

TEST(KserveProto, NoFieldsBeyondUpstream) {
  // Every field of the messages above is in the table: nothing was added under a new number.
  std::map<std::string, int> fields_per_message;
  for (const UpstreamField& u : kUpstreamFields) ++fields_per_message[u.message];
  for (const auto& [name, count] : fields_per_message) {
    SCOPED_TRACE(name);
    const auto* message = find_message(name);
    ASSERT_NE(message, nullptr);
    EXPECT_EQ(message->field_count(), count);
  }
  for (const char* empty : {"ServerLiveRequest", "ServerReadyRequest", "ServerMetadataRequest",
                            "RepositoryModelLoadResponse", "RepositoryModelUnloadResponse"}) {
    ASSERT_NE(find_message(empty), nullptr) << empty;
    EXPECT_EQ(find_message(empty)->field_count(), 0) << empty;
  }
}

TEST(KserveProto, ParameterMapsAndOneof) {
  for (const char* m :
       {"ModelInferRequest", "ModelInferRequest.InferInputTensor", "ModelInferRequest.InferRequestedOutputTensor",
        "ModelInferResponse", "ModelInferResponse.InferOutputTensor"}) {
    SCOPED_TRACE(m);
    const auto* field = find_message(m)->FindFieldByName("parameters");
    ASSERT_TRUE(field->is_map());
    EXPECT_EQ(field->message_type()->map_key()->type(), FD::TYPE_STRING);
    EXPECT_EQ(field->message_type()->map_value()->message_type()->full_name(), "inference.InferParameter");
  }
  for (const char* m : {"RepositoryModelLoadRequest", "RepositoryModelUnloadRequest"}) {
    SCOPED_TRACE(m);
    const auto* field = find_message(m)->FindFieldByName("parameters");
    ASSERT_TRUE(field->is_map());
    EXPECT_EQ(field->message_type()->map_value()->message_type()->full_name(), "inference.ModelRepositoryParameter");
  }
  const auto* oneof = find_message("InferParameter")->FindOneofByName("parameter_choice");
  ASSERT_NE(oneof, nullptr);
  EXPECT_EQ(oneof->field_count(), 5);
  ASSERT_NE(find_message("ModelRepositoryParameter")->FindOneofByName("parameter_choice"), nullptr);
  EXPECT_EQ(find_message("ModelRepositoryParameter")->FindOneofByName("parameter_choice")->field_count(), 4);
}

TEST(KserveProto, ServiceMethods) {
  const auto* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName("inference.GRPCInferenceService");
  ASSERT_NE(service, nullptr);
  const char* const methods[][3] = {
      {"ServerLive", "ServerLiveRequest", "ServerLiveResponse"},
      {"ServerReady", "ServerReadyRequest", "ServerReadyResponse"},
      {"ModelReady", "ModelReadyRequest", "ModelReadyResponse"},
      {"ServerMetadata", "ServerMetadataRequest", "ServerMetadataResponse"},
      {"ModelMetadata", "ModelMetadataRequest", "ModelMetadataResponse"},
      {"ModelInfer", "ModelInferRequest", "ModelInferResponse"},
      {"RepositoryIndex", "RepositoryIndexRequest", "RepositoryIndexResponse"},
      {"RepositoryModelLoad", "RepositoryModelLoadRequest", "RepositoryModelLoadResponse"},
      {"RepositoryModelUnload", "RepositoryModelUnloadRequest", "RepositoryModelUnloadResponse"},
  };
  for (const auto& m : methods) {
    SCOPED_TRACE(m[0]);
    const auto* method = service->FindMethodByName(m[0]);
    ASSERT_NE(method, nullptr);
    EXPECT_EQ(method->input_type()->full_name(), std::string("inference.") + m[1]);
    EXPECT_EQ(method->output_type()->full_name(), std::string("inference.") + m[2]);
    EXPECT_FALSE(method->client_streaming());
    EXPECT_FALSE(method->server_streaming());
  }
}

}  // namespace
}  // namespace tessera::kserve
