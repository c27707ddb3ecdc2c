#include "client/kserve/kserve_model.h"

#include <cstring>
#include <filesystem>

#include "accel/image/image.h"
#include "accel/runtime/model_config.h"

namespace tessera::client::kserve {
namespace {

grpc::Status unusable(const std::string& message) { return {grpc::StatusCode::FAILED_PRECONDITION, message}; }

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? "," : "") + std::to_string(shape[i]);
  return out + "]";
}

// The FP32 input's geometry from its shape: [N,]C,H,W or [N,]H,W,C with C = 1 or 3.
grpc::Status fp32_geometry(ModelPlan& plan) {
  std::vector<int64_t> dims = plan.shape;
  if (dims.size() == 4) dims.erase(dims.begin());
  if (dims.size() != 3) return unusable("the model's FP32 input " + shape_text(plan.shape) + " is not an image");
  const bool chw = dims[0] == 1 || dims[0] == 3;
  const bool hwc = dims[2] == 1 || dims[2] == 3;
  if (!chw && !hwc) return unusable("the model's FP32 input " + shape_text(plan.shape) + " has no 1 or 3 channels");
  plan.nhwc = !chw;
  plan.preprocess.channels = static_cast<int>(chw ? dims[0] : dims[2]);
  plan.preprocess.height = static_cast<int>(chw ? dims[1] : dims[0]);
  plan.preprocess.width = static_cast<int>(chw ? dims[2] : dims[1]);
  return grpc::Status::OK;
}

// How an image becomes the FP32 tensor: the folder's model.toml [input], or pixel / 255.
grpc::Status fp32_preprocess(const ModelPlanOptions& options, ModelPlan& plan) {
  if (!options.preprocess_dir.empty()) {
    auto config = load_model_config(options.preprocess_dir);
    if (!config) return unusable("--preprocess: " + config.status().message());
    plan.preprocess = config->input;
  } else {
    plan.preprocess = PreprocessConfig{};
    plan.preprocess.resize = ResizeMode::kStretch;
  }
  grpc::Status status = fp32_geometry(plan);
  if (!status.ok()) return status;
  const auto channels = static_cast<size_t>(plan.preprocess.channels);
  if (plan.preprocess.mean.size() != channels) plan.preprocess.mean.assign(channels, 0.0f);
  if (plan.preprocess.std.size() != channels) plan.preprocess.std.assign(channels, 1.0f);
  plan.preprocess.mean_image.clear();
  return grpc::Status::OK;
}

// BYTES or FP32, from --input-format and what the metadata says.
grpc::Status choose_datatype(const ModelPlanOptions& options, const std::string& advertised, ModelPlan& plan) {
  const bool automatic = options.input_format == "auto";
  const bool bytes =
      options.input_format == "bytes" || (automatic && (advertised == "BYTES" || plan.server == "tesserad"));
  const bool fp32 = options.input_format == "fp32" || (automatic && advertised == "FP32");
  if (!bytes && !fp32)
    return unusable("the model's input is " + advertised + ": the client sends BYTES (encoded images) or FP32");
  plan.datatype = bytes ? "BYTES" : "FP32";
  return grpc::Status::OK;
}

}  // namespace

grpc::Status plan_model(KserveTransport& transport, const ModelPlanOptions& options, ModelPlan& plan) {
  grpc::Status status = transport.server_name(plan.server);
  if (!status.ok()) return status;
  plan.model = options.model;
  plan.version = options.version;
  if (plan.model.empty()) {
    status = transport.first_ready_model(plan.model);
    if (!status.ok()) return status;
  }
  inference::ModelMetadataResponse metadata;
  status = transport.model_metadata(plan.model, plan.version, metadata);
  if (!status.ok()) return status;
  if (metadata.inputs_size() != 1)
    return unusable("the model has " + std::to_string(metadata.inputs_size()) +
                    " inputs; the client feeds models of one image input");
  if (metadata.outputs_size() < 1) return unusable("the model has no output");
  const auto& input = metadata.inputs(0);
  plan.input_name = input.name();
  plan.output_name = metadata.outputs(0).name();
  status = choose_datatype(options, input.datatype(), plan);
  if (!status.ok()) return status;
  plan.shape.clear();
  for (int64_t d : input.shape()) plan.shape.push_back(d < 0 ? 1 : d);
  if (plan.datatype == "BYTES") {
    if (input.datatype() != "BYTES" || plan.shape.empty()) plan.shape = {1};
    return grpc::Status::OK;
  }
  if (input.datatype() != "FP32") return unusable("--input-format fp32: the model's input is " + input.datatype());
  return fp32_preprocess(options, plan);
}

Result<InputTensor> make_input(const ModelPlan& plan, const std::string& image) {
  InputTensor input{plan.input_name, plan.datatype, plan.shape, {}};
  if (plan.datatype == "BYTES") {
    append_bytes_element(input.raw, image);
    return input;
  }
  const auto* bytes = reinterpret_cast<const uint8_t*>(image.data());
  auto decoded = decode_image({bytes, image.size()}, plan.preprocess.channels);
  if (!decoded) return decoded.status();
  const PreprocessConfig& p = plan.preprocess;
  const size_t plane = static_cast<size_t>(p.height) * static_cast<size_t>(p.width);
  const size_t channels = static_cast<size_t>(p.channels);
  std::vector<float> chw(plane * channels);
  TESSERA_RETURN_IF_ERROR(preprocess_into(*decoded, p, chw.data()));
  std::vector<float> values = chw;
  if (plan.nhwc) {
    for (size_t c = 0; c < channels; ++c)
      for (size_t i = 0; i < plane; ++i) values[i * channels + c] = chw[c * plane + i];
  }
  input.raw.resize(values.size() * sizeof(float));
  std::memcpy(input.raw.data(), values.data(), input.raw.size());  // little-endian hosts only (x86, ARM)
  return input;
}

v1::ClassifyResponse to_classify_response(const InferAnswer& answer) {
  v1::ClassifyResponse response;
  response.set_model(answer.model_name);
  response.set_request_id(answer.id);
  int64_t version = 0;
  try {
    version = answer.model_version.empty() ? 0 : std::stoll(answer.model_version);
  } catch (const std::exception&) {
    version = 0;  // a server's version that is not a number: not shown
  }
  response.set_model_version(version);
  for (const ScoredClass& c : answer.classes) {
    v1::Class* out = response.add_classes();
    out->set_index(static_cast<uint32_t>(c.index));
    out->set_label(c.label);
    out->set_score(c.score);
  }
  return response;
}

}  // namespace tessera::client::kserve
