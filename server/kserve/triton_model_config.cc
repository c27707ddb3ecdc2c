#include "server/kserve/triton_model_config.h"

#include <google/protobuf/util/json_util.h>

#include <nlohmann/json.hpp>

#include <array>
#include <string>
#include <string_view>

#include "server/kserve/model_signature.h"
#include "server/models/model_repository.h"

namespace tessera::kserve {
namespace {

// The fields of ModelConfig's subset (model_config.proto) that are 64-bit integers: protobuf's
// JSON mapping writes them as strings, Triton's endpoint as numbers.
constexpr std::array<std::string_view, 7> kInt64Fields = {"dims",
                                                          "shape",
                                                          "versions",
                                                          "max_queue_delay_microseconds",
                                                          "default_timeout_microseconds",
                                                          "priority_levels",
                                                          "default_priority_level"};

bool is_int64_field(std::string_view key) {
  for (std::string_view field : kInt64Fields) {
    if (key == field) return true;
  }
  return false;
}

// "123" -> 123 (the mapping's strings are the integers' decimal digits).
nlohmann::json as_number(const nlohmann::json& value) {
  if (!value.is_string()) return value;
  const std::string& text = value.get_ref<const std::string&>();
  if (!text.empty() && text.front() == '-') return std::stoll(text);
  return std::stoull(text);
}

// Turns the 64-bit integer fields of `node` and everything under it into numbers.
void unquote_int64_fields(nlohmann::json& node) {
  if (node.is_array()) {
    for (nlohmann::json& item : node) unquote_int64_fields(item);
    return;
  }
  if (!node.is_object()) return;
  for (auto& [key, value] : node.items()) {
    if (!is_int64_field(key)) {
      unquote_int64_fields(value);
    } else if (value.is_array()) {
      for (nlohmann::json& item : value) item = as_number(item);
    } else {
      value = as_number(value);
    }
  }
}

void fill_io(inference::ModelConfig& c, const ServedModel& model) {
  const ModelConfig& config = model.config();
  const ModelSignature signature = make_model_signature(model);
  inference::ModelInput* input = c.add_input();
  input->set_name(signature.input_name);
  input->set_data_type(inference::TYPE_FP32);
  input->set_format(inference::ModelInput::FORMAT_NCHW);
  for (int d : {config.input.channels, config.input.height, config.input.width}) input->add_dims(d);
  inference::ModelOutput* output = c.add_output();
  output->set_name(signature.output_name);
  output->set_data_type(inference::TYPE_FP32);
  output->add_dims(model.num_classes());
  // Triton names the labels file relative to the model's folder; model.toml names it relative to
  // the version's files, which config.dir is.
  if (!config.labels_file.empty()) {
    output->set_label_filename(config.labels_file.lexically_relative(config.dir).generic_string());
  }
}

void fill_scheduling(inference::ModelConfig& c, const ServedModel& model) {
  const BatchPolicy& b = model.batching;
  inference::ModelDynamicBatching* batching = c.mutable_dynamic_batching();
  // The batcher closes a batch at max_batch images or after the delay: max_batch is the one size
  // it aims for.
  batching->add_preferred_batch_size(static_cast<int32_t>(b.max_batch));
  batching->set_max_queue_delay_microseconds(b.max_queue_delay_us);
  // A full queue refuses at once (REJECT), as Triton's max_queue_size does.
  batching->mutable_default_queue_policy()->set_max_queue_size(b.max_queue);

  inference::ModelInstanceGroup* group = c.add_instance_group();
  group->set_name(model.name() + "_0");
  // The enum has no FPGA: a board's instances are devices the model itself places batches on
  // (KIND_MODEL, as Triton has it for devices it does not manage); the emulator and fp32 run on
  // the CPU, so KIND_CPU says where the work is done.
  group->set_kind(model.device == "xrt" ? inference::ModelInstanceGroup::KIND_MODEL
                                        : inference::ModelInstanceGroup::KIND_CPU);
  group->set_count(model.devices.empty() ? 1 : static_cast<int32_t>(model.devices.size()));
}

void fill_version_policy(inference::ModelConfig& c, const ServedModel& model) {
  const VersionPolicy& policy = model.config().version_policy;
  if (policy.specific.empty()) {
    c.mutable_version_policy()->mutable_latest()->set_num_versions(policy.latest);
    return;
  }
  for (int64_t v : policy.specific) c.mutable_version_policy()->mutable_specific()->add_versions(v);
}

}  // namespace

inference::ModelConfig make_triton_model_config(const ServedModel& model) {
  const ModelConfig& config = model.config();
  inference::ModelConfig c;
  c.set_name(config.name);
  // Not Triton's "onnxruntime_onnx": tesserad compiles the file for its own int8/fp32 engine, so
  // the backend is "tessera" and the platform names the format it was read from.
  c.set_backend("tessera");
  c.set_platform("tessera_" + config.format);
  c.set_max_batch_size(static_cast<int32_t>(model.batching.max_batch));
  c.set_default_model_filename(config.file.filename().string());
  fill_version_policy(c, model);
  fill_io(c, model);
  fill_scheduling(c, model);
  (*c.mutable_parameters())["precision"].set_string_value(model.precision);
  (*c.mutable_parameters())["device"].set_string_value(model.device);
  std::string devices;
  for (unsigned d : model.devices) {
    if (!devices.empty()) devices += ',';
    devices += std::to_string(d);
  }
  if (!devices.empty()) (*c.mutable_parameters())["devices"].set_string_value(devices);
  return c;
}

Result<nlohmann::json> triton_model_config_json(const inference::ModelConfig& config) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string text;
  if (const auto status = google::protobuf::util::MessageToJsonString(config, &text, options); !status.ok()) {
    return Status::internal("the model configuration does not convert to JSON: " + status.ToString());
  }
  nlohmann::json json = nlohmann::json::parse(text);
  unquote_int64_fields(json);
  return json;
}

}  // namespace tessera::kserve
