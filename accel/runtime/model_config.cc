#include "accel/runtime/model_config.h"

#include <algorithm>
#include <fstream>
#include <initializer_list>
#include <system_error>

#include "accel/common/toml_file.h"
#include "accel/import/caffe/caffe_importer.h"

namespace tessera {
namespace {
namespace fs = std::filesystem;

// Errors about model.toml name the file and the key.
Status config_error(const std::filesystem::path& file, const std::string& key, const std::string& why) {
  return Status::invalid_argument(file.string() + ": '" + key + "' " + why);
}

// Where the names model.toml gives resolve: relative to `files` (the version's folder, or the model
// folder itself), and never outside `root` (the model folder), once ".." and symbolic links are
// resolved. So a model folder cannot name /etc/passwd or ../../secret, and the repository's load
// API cannot be turned into a file reader (the labels, for one, are served back to clients).
struct NamedFiles {
  fs::path toml;   // model.toml, for the errors
  fs::path root;   // the model folder, canonical
  fs::path files;  // what names are relative to, absolute

  // The canonical path `name` (the value of `key`) names, or INVALID_ARGUMENT saying why not.
  Result<fs::path> resolve(const std::string& key, const std::string& name) const {
    const fs::path given(name);
    if (given.has_root_path()) {
      return config_error(toml, key, "must be a path inside the model folder, not the absolute path " + name);
    }
    std::error_code ec;
    const fs::path resolved = fs::weakly_canonical(files / given, ec);
    if (ec) {
      return config_error(toml, key,
                          "names " + (files / given).string() + ", which cannot be resolved: " + ec.message());
    }
    const fs::path inside = resolved.lexically_relative(root);
    if (inside.empty() || *inside.begin() == "..") {
      return config_error(toml, key,
                          "names " + name + ", which resolves to " + resolved.string() + ", outside the model folder " +
                              root.string() + " (\"..\" and symbolic links may not leave it)");
    }
    return resolved;
  }
};

Result<std::string> required_string(const toml::table& table, const std::filesystem::path& file,
                                    const std::string& key) {
  const auto* node = table.get(key);
  if (!node) return config_error(file, key, "is required");
  auto value = node->value<std::string>();
  if (!value || value->empty()) return config_error(file, key, "must be a non-empty string");
  return *value;
}

Result<int> positive_int(const toml::table& table, const std::filesystem::path& file, const std::string& key, int max) {
  const auto* node = table.get(key);
  if (!node) return config_error(file, "input." + key, "is required");
  // value_exact: integers only. value<int64_t>() also converts floats, with a static_cast that is
  // undefined past int64 (height = 1.9e19: fuzz_model_toml, UBSan).
  auto value = node->value_exact<int64_t>();
  if (!value || *value < 1 || *value > max) {
    return config_error(file, "input." + key, "must be an integer from 1 to " + std::to_string(max));
  }
  return static_cast<int>(*value);
}

Result<std::vector<float>> float_list(const toml::table& table, const std::filesystem::path& file,
                                      const std::string& key, int channels, float fallback) {
  const auto* node = table.get(key);
  if (!node) return std::vector<float>(static_cast<size_t>(channels), fallback);
  const auto* array = node->as_array();
  if (!array || (array->size() != 1 && array->size() != static_cast<size_t>(channels))) {
    return config_error(file, "input." + key, "must be a list of 1 or " + std::to_string(channels) + " numbers");
  }
  std::vector<float> values;
  for (const auto& element : *array) {
    auto v = element.value<double>();
    if (!v) return config_error(file, "input." + key, "must hold numbers only");
    values.push_back(static_cast<float>(*v));
  }
  if (values.size() == 1) values.assign(static_cast<size_t>(channels), values[0]);
  return values;
}

Result<InvertMode> invert_mode(const toml::table& table, const std::filesystem::path& file) {
  const auto* node = table.get("invert");
  if (!node) return InvertMode::kNo;
  if (auto b = node->value<bool>()) return *b ? InvertMode::kYes : InvertMode::kNo;
  if (auto s = node->value<std::string>(); s && *s == "auto") return InvertMode::kAuto;
  return config_error(file, "input.invert", "must be true, false or \"auto\"");
}

Result<ResizeMode> resize_mode(const toml::table& table, const std::filesystem::path& file) {
  auto s = table["resize"].value_or(std::string("stretch"));
  if (s == "stretch") return ResizeMode::kStretch;
  if (s == "fit") return ResizeMode::kFit;
  if (s == "center_crop") return ResizeMode::kCenterCrop;
  return config_error(file, "input.resize", "must be \"stretch\", \"fit\" or \"center_crop\"");
}

// A key the loader does not know is a mistake (a typo would otherwise be silently ignored).
Status only_known_keys(const toml::table& table, const std::filesystem::path& file, const std::string& prefix,
                       std::initializer_list<std::string_view> known) {
  for (const auto& [key, value] : table) {
    if (std::find(known.begin(), known.end(), key.str()) != known.end()) continue;
    std::string list;
    for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    return config_error(file, prefix + std::string(key.str()), "is not a setting here (known: " + list + ")");
  }
  return Status::ok();
}

Result<PreprocessConfig> input_config(const toml::table& root, const std::filesystem::path& file) {
  const auto* input = root["input"].as_table();
  if (!input) return config_error(file, "input", "table is required");
  TESSERA_RETURN_IF_ERROR(
      only_known_keys(*input, file, "input.",
                      {"width", "height", "channels", "scale", "mean", "std", "invert", "resize", "channel_order"}));
  PreprocessConfig in;
  TESSERA_ASSIGN_OR_RETURN(in.width, positive_int(*input, file, "width", 8192));
  TESSERA_ASSIGN_OR_RETURN(in.height, positive_int(*input, file, "height", 8192));
  TESSERA_ASSIGN_OR_RETURN(in.channels, positive_int(*input, file, "channels", 3));
  if (in.channels == 2) return config_error(file, "input.channels", "must be 1 (gray) or 3 (RGB)");
  in.scale = static_cast<float>((*input)["scale"].value_or(255.0));
  if (!(in.scale > 0)) return config_error(file, "input.scale", "must be positive");
  TESSERA_ASSIGN_OR_RETURN(in.mean, float_list(*input, file, "mean", in.channels, 0.0f));
  TESSERA_ASSIGN_OR_RETURN(in.std, float_list(*input, file, "std", in.channels, 1.0f));
  for (float s : in.std) {
    if (!(s > 0)) return config_error(file, "input.std", "must hold positive numbers");
  }
  TESSERA_ASSIGN_OR_RETURN(in.invert, invert_mode(*input, file));
  TESSERA_ASSIGN_OR_RETURN(in.resize, resize_mode(*input, file));
  if (const auto* node = input->get("channel_order")) {
    auto order = node->value<std::string>();
    if (!order || (*order != "rgb" && *order != "bgr")) {
      return config_error(file, "input.channel_order", "must be \"rgb\" or \"bgr\"");
    }
    if (*order == "bgr" && in.channels != 3) {
      return config_error(file, "input.channel_order", "\"bgr\" needs input.channels = 3");
    }
    in.bgr = *order == "bgr";
  }
  return in;
}

Result<QuantConfig> quant_config(const toml::table& root, const std::filesystem::path& file, const NamedFiles& named) {
  QuantConfig q;
  const auto* table = root["quantization"].as_table();
  if (!table) return q;
  TESSERA_RETURN_IF_ERROR(
      only_known_keys(*table, file, "quantization.", {"calibration", "method", "percentile", "max_images"}));
  if (const auto* node = table->get("calibration")) {
    auto value = node->value<std::string>();
    if (!value || value->empty()) return config_error(file, "quantization.calibration", "must be a folder name");
    TESSERA_ASSIGN_OR_RETURN(q.calibration_dir, named.resolve("quantization.calibration", *value));
    if (!std::filesystem::is_directory(q.calibration_dir)) {
      return config_error(file, "quantization.calibration",
                          "names " + q.calibration_dir.string() + ", which is not a folder");
    }
  }
  const auto method = (*table)["method"].value_or(std::string("minmax"));
  if (method == "minmax") {
    q.calibration.method = quant::CalibrationMethod::kMinMax;
  } else if (method == "percentile") {
    q.calibration.method = quant::CalibrationMethod::kPercentile;
  } else {
    return config_error(file, "quantization.method", "must be \"minmax\" or \"percentile\"");
  }
  q.calibration.percentile = (*table)["percentile"].value_or(99.99);
  if (!(q.calibration.percentile > 0 && q.calibration.percentile <= 100)) {
    return config_error(file, "quantization.percentile", "must be in (0, 100]");
  }
  const int64_t max_images = (*table)["max_images"].value_or(int64_t{200});
  if (max_images < 1 || max_images > 100000) {
    return config_error(file, "quantization.max_images", "must be from 1 to 100000");
  }
  q.max_images = static_cast<int>(max_images);
  return q;
}

Result<std::optional<uint32_t>> optional_count(const toml::table& table, const std::filesystem::path& file,
                                               const std::string& key, int64_t lo, int64_t hi) {
  const auto* node = table.get(key);
  if (!node) return std::optional<uint32_t>();
  auto value = node->value_exact<int64_t>();
  if (!value || *value < lo || *value > hi) {
    return config_error(file, "batching." + key,
                        "must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
  }
  return std::optional<uint32_t>(static_cast<uint32_t>(*value));
}

Result<BatchingConfig> batching_config(const toml::table& root, const std::filesystem::path& file) {
  BatchingConfig b;
  const auto* node = root.get("batching");
  if (!node) return b;
  const auto* table = node->as_table();
  if (!table) return config_error(file, "batching", "must be a table");
  TESSERA_RETURN_IF_ERROR(only_known_keys(*table, file, "batching.", {"max_batch", "max_queue_delay_us", "max_queue"}));
  TESSERA_ASSIGN_OR_RETURN(b.max_batch, optional_count(*table, file, "max_batch", 1, 256));
  TESSERA_ASSIGN_OR_RETURN(b.max_queue_delay_us, optional_count(*table, file, "max_queue_delay_us", 0, 10'000'000));
  TESSERA_ASSIGN_OR_RETURN(b.max_queue, optional_count(*table, file, "max_queue", 1, 1 << 20));
  return b;
}

Result<InstancesConfig> instances_config(const toml::table& root, const std::filesystem::path& file) {
  InstancesConfig instances;
  const auto* node = root.get("instances");
  if (!node) return instances;
  const auto* table = node->as_table();
  if (!table) return config_error(file, "instances", "must be a table");
  TESSERA_RETURN_IF_ERROR(only_known_keys(*table, file, "instances.", {"count", "devices"}));
  if (table->contains("count") && table->contains("devices")) {
    return config_error(file, "instances", "takes count or devices, not both");
  }
  if (const auto* count = table->get("count")) {
    auto value = count->value_exact<int64_t>();
    if (!value || *value < 1 || *value > 256) return config_error(file, "instances.count", "must be from 1 to 256");
    instances.count = static_cast<uint32_t>(*value);
  }
  if (const auto* devices = table->get("devices")) {
    const auto* list = devices->as_array();
    if (!list || list->empty()) return config_error(file, "instances.devices", "must be a non-empty array of indices");
    for (const auto& item : *list) {
      auto index = item.value_exact<int64_t>();
      if (!index || *index < 0 || *index > 1023) {
        return config_error(file, "instances.devices", "must hold device indices from 0 to 1023");
      }
      instances.devices.push_back(static_cast<unsigned>(*index));
    }
  }
  return instances;
}

Result<VersionPolicy> version_policy(const toml::table& root, const std::filesystem::path& file) {
  VersionPolicy policy;
  const auto* node = root.get("version_policy");
  if (!node) return policy;
  const auto* table = node->as_table();
  if (!table) return config_error(file, "version_policy", "must be a table");
  TESSERA_RETURN_IF_ERROR(only_known_keys(*table, file, "version_policy.", {"latest", "specific"}));
  if (table->contains("latest") && table->contains("specific")) {
    return config_error(file, "version_policy", "takes latest or specific, not both");
  }
  if (const auto* latest = table->get("latest")) {
    auto value = latest->value_exact<int64_t>();
    if (!value || *value < 1 || *value > 1000)
      return config_error(file, "version_policy.latest", "must be from 1 to 1000");
    policy.latest = static_cast<uint32_t>(*value);
  }
  if (const auto* specific = table->get("specific")) {
    const auto* list = specific->as_array();
    if (!list || list->empty()) return config_error(file, "version_policy.specific", "must be a non-empty array");
    for (const auto& item : *list) {
      auto version = item.value_exact<int64_t>();
      if (!version || *version < 1) {
        return config_error(file, "version_policy.specific", "must hold version numbers (1, 2, ...)");
      }
      policy.specific.push_back(*version);
    }
  }
  return policy;
}

// A file named by `key`, inside the model folder; it must exist and be a regular file.
Result<std::filesystem::path> existing_file(const toml::table& root, const NamedFiles& named, const std::string& key) {
  TESSERA_ASSIGN_OR_RETURN(std::string name, required_string(root, named.toml, key));
  TESSERA_ASSIGN_OR_RETURN(auto path, named.resolve(key, name));
  if (!std::filesystem::exists(path)) {
    return config_error(named.toml, key, "names " + path.string() + ", which does not exist");
  }
  if (!std::filesystem::is_regular_file(path)) {
    return config_error(named.toml, key, "names " + path.string() + ", which is not a regular file");
  }
  return path;
}

// Caffe's mean image cut to the input size: used as it is when the sizes match, centre-cropped
// when it is larger (as Caffe's test-phase crop does).
Result<std::vector<float>> mean_image(const std::filesystem::path& file, const std::filesystem::path& path,
                                      const PreprocessConfig& in) {
  auto mean = read_caffe_mean_file(path);
  if (!mean) return config_error(file, "mean_file", "is not usable: " + mean.status().message());
  const int64_t c = mean->dim(0), h = mean->dim(1), w = mean->dim(2);
  if (c != in.channels || h < in.height || w < in.width) {
    return config_error(file, "mean_file",
                        "holds a " + std::to_string(c) + " x " + std::to_string(h) + " x " + std::to_string(w) +
                            " mean; the input is " + std::to_string(in.channels) + " x " + std::to_string(in.height) +
                            " x " + std::to_string(in.width) +
                            " (the mean needs as many channels and at least its size)");
  }
  const int64_t top = (h - in.height) / 2, left = (w - in.width) / 2;
  std::vector<float> out;
  out.reserve(static_cast<size_t>(c * in.height * in.width));
  for (int64_t ch = 0; ch < c; ++ch) {
    for (int64_t y = 0; y < in.height; ++y) {
      const float* row = mean->ptr() + (ch * h + top + y) * w + left;
      out.insert(out.end(), row, row + in.width);
    }
  }
  return out;
}

Result<std::vector<std::string>> read_labels(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return Status::not_found("cannot open labels file " + path.string());
  std::vector<std::string> labels;
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) labels.push_back(line);
  }
  if (labels.empty()) return Status::invalid_argument("labels file " + path.string() + " is empty");
  return labels;
}

}  // namespace

Result<std::string> read_model_name(const std::filesystem::path& dir) {
  TESSERA_ASSIGN_OR_RETURN(toml::table root, parse_toml_file(dir / "model.toml"));
  return required_string(root, dir / "model.toml", "name");
}

Result<VersionPolicy> read_version_policy(const std::filesystem::path& dir) {
  TESSERA_ASSIGN_OR_RETURN(toml::table root, parse_toml_file(dir / "model.toml"));
  return version_policy(root, dir / "model.toml");
}

Result<ModelConfig> load_model_config(const std::filesystem::path& dir, const std::filesystem::path& files_dir) {
  const auto file = dir / "model.toml";
  if (!std::filesystem::exists(file)) return Status::not_found("no model.toml in " + dir.string());
  TESSERA_ASSIGN_OR_RETURN(toml::table root, parse_toml_file(file));
  TESSERA_RETURN_IF_ERROR(only_known_keys(root, file, "",
                                          {"name", "file", "format", "weights", "mean_file", "labels", "precision",
                                           "input", "quantization", "batching", "instances", "version_policy"}));
  ModelConfig config;
  config.dir = std::filesystem::absolute(files_dir.empty() ? dir : files_dir);
  std::error_code ec;
  const NamedFiles named{file, std::filesystem::canonical(dir, ec), config.dir};
  if (ec) return Status::not_found("model folder " + dir.string() + " cannot be resolved: " + ec.message());
  TESSERA_ASSIGN_OR_RETURN(config.name, required_string(root, file, "name"));
  TESSERA_ASSIGN_OR_RETURN(config.file, existing_file(root, named, "file"));
  if (const auto* node = root.get("format")) {
    auto value = node->value<std::string>();
    if (!value || (*value != "onnx" && *value != "caffe"))
      return config_error(file, "format", "must be \"onnx\" or \"caffe\"");
    config.format = *value;
  }
  TESSERA_ASSIGN_OR_RETURN(config.input, input_config(root, file));
  if (config.format == "caffe") {
    TESSERA_ASSIGN_OR_RETURN(config.weights, existing_file(root, named, "weights"));
    if (root.contains("mean_file")) {
      TESSERA_ASSIGN_OR_RETURN(config.mean_file, existing_file(root, named, "mean_file"));
      TESSERA_ASSIGN_OR_RETURN(config.input.mean_image, mean_image(file, config.mean_file, config.input));
    }
  } else {
    for (const char* key : {"weights", "mean_file"}) {
      if (root.contains(key)) return config_error(file, key, "is only for format = \"caffe\"");
    }
  }
  TESSERA_ASSIGN_OR_RETURN(config.labels_file, existing_file(root, named, "labels"));
  TESSERA_ASSIGN_OR_RETURN(config.labels, read_labels(config.labels_file));
  TESSERA_ASSIGN_OR_RETURN(config.quantization, quant_config(root, file, named));
  if (const auto* node = root.get("precision")) {
    auto value = node->value<std::string>();
    if (!value || (*value != "int8" && *value != "fp32"))
      return config_error(file, "precision", "must be \"int8\" or \"fp32\"");
    config.precision = *value;
  }
  TESSERA_ASSIGN_OR_RETURN(config.batching, batching_config(root, file));
  TESSERA_ASSIGN_OR_RETURN(config.instances, instances_config(root, file));
  TESSERA_ASSIGN_OR_RETURN(config.version_policy, version_policy(root, file));
  return config;
}

}  // namespace tessera
