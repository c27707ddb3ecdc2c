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
    // Triton's extensions (grpc_service.proto) and the model configuration (model_config.proto), the
    // fields tesserad's files keep; each a subset that keeps upstream's numbers.
    {"ModelStreamInferResponse", "error_message", 1, FD::TYPE_STRING, false},
    {"ModelStreamInferResponse", "infer_response", 2, FD::TYPE_MESSAGE, false},
    {"ModelConfigRequest", "name", 1, FD::TYPE_STRING, false},
    {"ModelConfigRequest", "version", 2, FD::TYPE_STRING, false},
    {"ModelConfigResponse", "config", 1, FD::TYPE_MESSAGE, false},
    {"ModelStatisticsRequest", "name", 1, FD::TYPE_STRING, false},
    {"ModelStatisticsRequest", "version", 2, FD::TYPE_STRING, false},
    {"StatisticDuration", "count", 1, FD::TYPE_UINT64, false},
    {"StatisticDuration", "ns", 2, FD::TYPE_UINT64, false},
    {"InferStatistics", "success", 1, FD::TYPE_MESSAGE, false},
    {"InferStatistics", "fail", 2, FD::TYPE_MESSAGE, false},
    {"InferStatistics", "queue", 3, FD::TYPE_MESSAGE, false},
    {"InferStatistics", "compute_input", 4, FD::TYPE_MESSAGE, false},
    {"InferStatistics", "compute_infer", 5, FD::TYPE_MESSAGE, false},
    {"InferStatistics", "compute_output", 6, FD::TYPE_MESSAGE, false},
    {"InferStatistics", "cache_hit", 7, FD::TYPE_MESSAGE, false},
    {"InferStatistics", "cache_miss", 8, FD::TYPE_MESSAGE, false},
    {"InferResponseStatistics", "compute_infer", 1, FD::TYPE_MESSAGE, false},
    {"InferResponseStatistics", "compute_output", 2, FD::TYPE_MESSAGE, false},
    {"InferResponseStatistics", "success", 3, FD::TYPE_MESSAGE, false},
    {"InferResponseStatistics", "fail", 4, FD::TYPE_MESSAGE, false},
    {"InferResponseStatistics", "empty_response", 5, FD::TYPE_MESSAGE, false},
    {"InferResponseStatistics", "cancel", 6, FD::TYPE_MESSAGE, false},
    {"InferBatchStatistics", "batch_size", 1, FD::TYPE_UINT64, false},
    {"InferBatchStatistics", "compute_input", 2, FD::TYPE_MESSAGE, false},
    {"InferBatchStatistics", "compute_infer", 3, FD::TYPE_MESSAGE, false},
    {"InferBatchStatistics", "compute_output", 4, FD::TYPE_MESSAGE, false},
    {"MemoryUsage", "type", 1, FD::TYPE_STRING, false},
    {"MemoryUsage", "id", 2, FD::TYPE_INT64, false},
    {"MemoryUsage", "byte_size", 3, FD::TYPE_UINT64, false},
    {"ModelStatistics", "name", 1, FD::TYPE_STRING, false},
    {"ModelStatistics", "version", 2, FD::TYPE_STRING, false},
    {"ModelStatistics", "last_inference", 3, FD::TYPE_UINT64, false},
    {"ModelStatistics", "inference_count", 4, FD::TYPE_UINT64, false},
    {"ModelStatistics", "execution_count", 5, FD::TYPE_UINT64, false},
    {"ModelStatistics", "inference_stats", 6, FD::TYPE_MESSAGE, false},
    {"ModelStatistics", "batch_stats", 7, FD::TYPE_MESSAGE, true},
    {"ModelStatistics", "memory_usage", 8, FD::TYPE_MESSAGE, true},
    {"ModelStatistics", "response_stats", 9, FD::TYPE_MESSAGE, true},
    {"ModelStatisticsResponse", "model_stats", 1, FD::TYPE_MESSAGE, true},
    {"SystemSharedMemoryStatusRequest", "name", 1, FD::TYPE_STRING, false},
    {"SystemSharedMemoryStatusResponse", "regions", 1, FD::TYPE_MESSAGE, true},
    {"SystemSharedMemoryStatusResponse.RegionStatus", "name", 1, FD::TYPE_STRING, false},
    {"SystemSharedMemoryStatusResponse.RegionStatus", "key", 2, FD::TYPE_STRING, false},
    {"SystemSharedMemoryStatusResponse.RegionStatus", "offset", 3, FD::TYPE_UINT64, false},
    {"SystemSharedMemoryStatusResponse.RegionStatus", "byte_size", 4, FD::TYPE_UINT64, false},
    {"SystemSharedMemoryRegisterRequest", "name", 1, FD::TYPE_STRING, false},
    {"SystemSharedMemoryRegisterRequest", "key", 2, FD::TYPE_STRING, false},
    {"SystemSharedMemoryRegisterRequest", "offset", 3, FD::TYPE_UINT64, false},
    {"SystemSharedMemoryRegisterRequest", "byte_size", 4, FD::TYPE_UINT64, false},
    {"SystemSharedMemoryUnregisterRequest", "name", 1, FD::TYPE_STRING, false},
    {"ModelInstanceGroup", "name", 1, FD::TYPE_STRING, false},
    {"ModelInstanceGroup", "kind", 4, FD::TYPE_ENUM, false},
    {"ModelInstanceGroup", "count", 2, FD::TYPE_INT32, false},
    {"ModelInstanceGroup", "gpus", 3, FD::TYPE_INT32, true},
    {"ModelInstanceGroup", "profile", 5, FD::TYPE_STRING, true},
    {"ModelInstanceGroup", "passive", 7, FD::TYPE_BOOL, false},
    {"ModelInstanceGroup", "host_policy", 9, FD::TYPE_STRING, false},
    {"ModelTensorReshape", "shape", 1, FD::TYPE_INT64, true},
    {"ModelInput", "name", 1, FD::TYPE_STRING, false},
    {"ModelInput", "data_type", 2, FD::TYPE_ENUM, false},
    {"ModelInput", "format", 3, FD::TYPE_ENUM, false},
    {"ModelInput", "dims", 4, FD::TYPE_INT64, true},
    {"ModelInput", "reshape", 5, FD::TYPE_MESSAGE, false},
    {"ModelInput", "is_shape_tensor", 6, FD::TYPE_BOOL, false},
    {"ModelInput", "allow_ragged_batch", 7, FD::TYPE_BOOL, false},
    {"ModelInput", "optional", 8, FD::TYPE_BOOL, false},
    {"ModelOutput", "name", 1, FD::TYPE_STRING, false},
    {"ModelOutput", "data_type", 2, FD::TYPE_ENUM, false},
    {"ModelOutput", "dims", 3, FD::TYPE_INT64, true},
    {"ModelOutput", "reshape", 5, FD::TYPE_MESSAGE, false},
    {"ModelOutput", "label_filename", 4, FD::TYPE_STRING, false},
    {"ModelOutput", "is_shape_tensor", 6, FD::TYPE_BOOL, false},
    {"ModelVersionPolicy", "latest", 1, FD::TYPE_MESSAGE, false},
    {"ModelVersionPolicy", "all", 2, FD::TYPE_MESSAGE, false},
    {"ModelVersionPolicy", "specific", 3, FD::TYPE_MESSAGE, false},
    {"ModelVersionPolicy.Latest", "num_versions", 1, FD::TYPE_UINT32, false},
    {"ModelVersionPolicy.Specific", "versions", 1, FD::TYPE_INT64, true},
    {"ModelQueuePolicy", "timeout_action", 1, FD::TYPE_ENUM, false},
    {"ModelQueuePolicy", "default_timeout_microseconds", 2, FD::TYPE_UINT64, false},
    {"ModelQueuePolicy", "allow_timeout_override", 3, FD::TYPE_BOOL, false},
    {"ModelQueuePolicy", "max_queue_size", 4, FD::TYPE_UINT32, false},
    {"ModelDynamicBatching", "preferred_batch_size", 1, FD::TYPE_INT32, true},
    {"ModelDynamicBatching", "max_queue_delay_microseconds", 2, FD::TYPE_UINT64, false},
    {"ModelDynamicBatching", "preserve_ordering", 3, FD::TYPE_BOOL, false},
    {"ModelDynamicBatching", "priority_levels", 4, FD::TYPE_UINT64, false},
    {"ModelDynamicBatching", "default_priority_level", 5, FD::TYPE_UINT64, false},
    {"ModelDynamicBatching", "default_queue_policy", 6, FD::TYPE_MESSAGE, false},
    {"ModelParameter", "string_value", 1, FD::TYPE_STRING, false},
    {"ModelConfig", "name", 1, FD::TYPE_STRING, false},
    {"ModelConfig", "platform", 2, FD::TYPE_STRING, false},
    {"ModelConfig", "backend", 17, FD::TYPE_STRING, false},
    {"ModelConfig", "runtime", 25, FD::TYPE_STRING, false},
    {"ModelConfig", "version_policy", 3, FD::TYPE_MESSAGE, false},
    {"ModelConfig", "max_batch_size", 4, FD::TYPE_INT32, false},
    {"ModelConfig", "input", 5, FD::TYPE_MESSAGE, true},
    {"ModelConfig", "output", 6, FD::TYPE_MESSAGE, true},
    {"ModelConfig", "dynamic_batching", 11, FD::TYPE_MESSAGE, false},
    {"ModelConfig", "instance_group", 7, FD::TYPE_MESSAGE, true},
    {"ModelConfig", "default_model_filename", 8, FD::TYPE_STRING, false},
    {"ModelConfig", "metric_tags", 10, FD::TYPE_MESSAGE, true},
    {"ModelConfig", "parameters", 14, FD::TYPE_MESSAGE, true},
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
  for (const char* empty :
       {"ServerLiveRequest", "ServerReadyRequest", "ServerMetadataRequest", "RepositoryModelLoadResponse",
        "RepositoryModelUnloadResponse", "SystemSharedMemoryRegisterResponse", "SystemSharedMemoryUnregisterResponse",
        "ModelVersionPolicy.All"}) {
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
      {"ModelConfig", "ModelConfigRequest", "ModelConfigResponse"},
      {"ModelStatistics", "ModelStatisticsRequest", "ModelStatisticsResponse"},
      {"SystemSharedMemoryStatus", "SystemSharedMemoryStatusRequest", "SystemSharedMemoryStatusResponse"},
      {"SystemSharedMemoryRegister", "SystemSharedMemoryRegisterRequest", "SystemSharedMemoryRegisterResponse"},
      {"SystemSharedMemoryUnregister", "SystemSharedMemoryUnregisterRequest", "SystemSharedMemoryUnregisterResponse"},
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
  const auto* stream = service->FindMethodByName("ModelStreamInfer");
  ASSERT_NE(stream, nullptr);
  EXPECT_EQ(stream->input_type()->full_name(), "inference.ModelInferRequest");
  EXPECT_EQ(stream->output_type()->full_name(), "inference.ModelStreamInferResponse");
  EXPECT_TRUE(stream->client_streaming());
  EXPECT_TRUE(stream->server_streaming());
  // Triton's RPCs left out (no GPU for CUDA shared memory; trace/log settings): UNIMPLEMENTED.
  for (const char* absent : {"CudaSharedMemoryRegister", "TraceSetting", "LogSettings"}) {
    EXPECT_EQ(service->FindMethodByName(absent), nullptr) << absent;
  }
}

TEST(KserveProto, ModelConfigEnumsAreUpstream) {
  const auto* pool = google::protobuf::DescriptorPool::generated_pool();
  (void)inference::ModelInferRequest::descriptor();
  const auto* data_type = pool->FindEnumTypeByName("inference.DataType");
  ASSERT_NE(data_type, nullptr);
  const std::pair<const char*, int> types[] = {
      {"TYPE_INVALID", 0}, {"TYPE_BOOL", 1},  {"TYPE_UINT8", 2}, {"TYPE_UINT16", 3},  {"TYPE_UINT32", 4},
      {"TYPE_UINT64", 5},  {"TYPE_INT8", 6},  {"TYPE_INT16", 7}, {"TYPE_INT32", 8},   {"TYPE_INT64", 9},
      {"TYPE_FP16", 10},   {"TYPE_FP32", 11}, {"TYPE_FP64", 12}, {"TYPE_STRING", 13}, {"TYPE_BF16", 14}};
  for (const auto& [name, number] : types) {
    ASSERT_NE(data_type->FindValueByName(name), nullptr) << name;
    EXPECT_EQ(data_type->FindValueByName(name)->number(), number) << name;
  }
  const auto* kind = pool->FindEnumTypeByName("inference.ModelInstanceGroup.Kind");
  ASSERT_NE(kind, nullptr);
  EXPECT_EQ(kind->FindValueByName("KIND_GPU")->number(), 1);
  EXPECT_EQ(kind->FindValueByName("KIND_CPU")->number(), 2);
  EXPECT_EQ(kind->FindValueByName("KIND_MODEL")->number(), 3);
  const auto* format = pool->FindEnumTypeByName("inference.ModelInput.Format");
  ASSERT_NE(format, nullptr);
  EXPECT_EQ(format->FindValueByName("FORMAT_NHWC")->number(), 1);
  EXPECT_EQ(format->FindValueByName("FORMAT_NCHW")->number(), 2);
}

}  // namespace
}  // namespace tessera::kserve
