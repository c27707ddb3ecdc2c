// A model's folder in the repository: model.toml (name, file, format, labels, [input]).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "accel/common/status.h"
#include "accel/image/preprocess.h"
#include "accel/quant/calibration.h"

namespace tessera {

// [quantization]: where the int8 path takes its calibration images and how it reads them.
struct QuantConfig {
  std::filesystem::path calibration_dir;  // absolute; empty when model.toml names none
  quant::CalibrationOptions calibration;
  int max_images = 200;
};

// How the daemon batches this model's requests; unset fields take the daemon's defaults.
struct BatchingConfig {
  std::optional<uint32_t> max_batch;           // images per batch (and per device run)
  std::optional<uint32_t> max_queue_delay_us;  // how long the first request waits for company
  std::optional<uint32_t> max_queue;           // waiting requests before RESOURCE_EXHAUSTED
};

// [instances]: which of the daemon's device instances (--devices) the model runs on; unset: all.
struct InstancesConfig {
  std::optional<uint32_t> count;  // the first `count` of the daemon's devices
  std::vector<unsigned> devices;  // these device indices (non-empty: `count` is unset)
};

// [version_policy]: which numbered version folders of the model are served: the `latest` N
// (default 1) or the `specific` ones.
struct VersionPolicy {
  uint32_t latest = 1;
  std::vector<int64_t> specific;  // non-empty: these versions, `latest` unused
};

struct ModelConfig {
  std::string name;
  std::filesystem::path dir;
  std::filesystem::path file;       // absolute path of the model file (Caffe: the deploy prototxt)
  std::string format = "onnx";      // "onnx" | "caffe"
  std::filesystem::path weights;    // caffe: absolute path of the .caffemodel
  std::filesystem::path mean_file;  // caffe, optional: mean.binaryproto (loaded into input.mean_image)
  PreprocessConfig input;
  std::filesystem::path labels_file;  // absolute path of the labels file
  std::vector<std::string> labels;    // from the labels file, one per class
  QuantConfig quantization;
  std::string precision;  // "int8" | "fp32"; empty: the daemon's --precision
  BatchingConfig batching;
  InstancesConfig instances;
  VersionPolicy version_policy;
};

// Parses DIR/model.toml; the error names the file and the offending key. The files it names
// (model, weights, labels, calibration folder) are looked for in `files_dir` when given (a
// version's numbered subfolder), else in DIR.
Result<ModelConfig> load_model_config(const std::filesystem::path& dir, const std::filesystem::path& files_dir = {});

// Only DIR/model.toml's `name`, and only its [version_policy] (checked as load_model_config does).
Result<std::string> read_model_name(const std::filesystem::path& dir);
Result<VersionPolicy> read_version_policy(const std::filesystem::path& dir);

}  // namespace tessera
