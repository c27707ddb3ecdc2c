#include "server/kserve/metadata.h"

#include <nlohmann/json.hpp>

#include <cstdint>

#include "server/kserve/infer_request.h"

namespace tessera::kserve {
namespace {

struct TensorInfo {
  std::string name;
  std::string_view datatype;
  std::vector<int64_t> shape;
};

TensorInfo input_info(const ModelSignature& m) { return {m.input_name, kFp32, {1, m.channels, m.height, m.width}}; }
TensorInfo output_info(const ModelSignature& m) { return {m.output_name, kFp32, {1, m.num_classes}}; }

void fill(inference::ModelMetadataResponse::TensorMetadata* out, const TensorInfo& t) {
  out->set_name(t.name);
  out->set_datatype(std::string(t.datatype));
  for (int64_t d : t.shape) out->add_shape(d);
}

nlohmann::json to_json(const TensorInfo& t) { return {{"name", t.name}, {"datatype", t.datatype}, {"shape", t.shape}}; }

std::vector<std::string> versions(const ModelSignature& m) {
  if (m.version.empty()) return {};
  return {m.version};
}

}  // namespace

std::vector<std::string> server_extensions(bool shared_memory) {
  std::vector<std::string> out = {"classification", "model_repository", "model_configuration", "statistics",
                                  "binary_tensor_data"};
  if (shared_memory) out.emplace_back("system_shared_memory");
  return out;
}

inference::ServerMetadataResponse make_server_metadata(std::string_view server_version, bool shared_memory) {
  inference::ServerMetadataResponse r;
  r.set_name(std::string(kServerName));
  r.set_version(std::string(server_version));
  for (const std::string& e : server_extensions(shared_memory)) r.add_extensions(e);
  return r;
}

nlohmann::json server_metadata_json(std::string_view server_version, bool shared_memory) {
  return {{"name", kServerName}, {"version", server_version}, {"extensions", server_extensions(shared_memory)}};
}

inference::ModelMetadataResponse make_model_metadata(const ModelSignature& model) {
  inference::ModelMetadataResponse r;
  r.set_name(model.name);
  for (const std::string& v : versions(model)) r.add_versions(v);
  r.set_platform(model.platform);
  fill(r.add_inputs(), input_info(model));
  fill(r.add_outputs(), output_info(model));
  return r;
}

nlohmann::json model_metadata_json(const ModelSignature& model) {
  return {{"name", model.name},
          {"versions", versions(model)},
          {"platform", model.platform},
          {"inputs", nlohmann::json::array({to_json(input_info(model))})},
          {"outputs", nlohmann::json::array({to_json(output_info(model))})}};
}

}  // namespace tessera::kserve
