// What the KServe codec knows of a model: names, version, tensor shapes and labels.
#pragma once

#include <string>
#include <vector>

namespace tessera {
struct ServedModel;
}

namespace tessera::kserve {

// Build once per served model and hand to every decode/encode call. The model's one input is the
// FP32 tensor [1, C, H, W] (NCHW, preprocessed); its one output is FP32 [1, num_classes] (softmax).
struct ModelSignature {
  std::string name;
  // The served version's number (its numbered subfolder; 1 for an unversioned model folder).
  std::string version = "1";
  std::string platform;  // "tessera_int8" | "tessera_fp32"
  std::string input_name = "input";
  int channels = 0;
  int height = 0;
  int width = 0;
  std::string output_name = "probabilities";
  int num_classes = 0;
  std::vector<std::string> labels;  // per class index; may be shorter than num_classes
  int max_batch = 1;                // images one request may carry (model.toml's [batching] max_batch)
};

ModelSignature make_model_signature(const ServedModel& model);

}  // namespace tessera::kserve
