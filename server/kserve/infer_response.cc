#include "server/kserve/infer_response.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <cstdint>

#include "server/batching/classify_result.h"
#include "server/kserve/raw_contents.h"

namespace tessera::kserve {
namespace {

// One output tensor, before it takes a transport's shape.
struct OutputTensor {
  std::string name;
  std::string_view datatype;
  std::vector<int64_t> shape;
  std::span<const float> floats;     // FP32
  std::vector<std::string> strings;  // BYTES
};

std::vector<OutputTensor> build_outputs(const InferRequest& request, const ModelSignature& model,
                                        std::span<const float> probabilities) {
  std::vector<RequestedOutput> wanted = request.outputs;
  if (wanted.empty()) wanted.push_back({model.output_name, 0});
  std::vector<OutputTensor> outputs;
  for (const RequestedOutput& o : wanted) {
    OutputTensor t;
    t.name = o.name;
    if (o.classification > 0) {
      t.datatype = kBytes;
      t.strings = classification_strings(probabilities, o.classification, model.labels);
      t.shape = {1, static_cast<int64_t>(t.strings.size())};
    } else {
      t.datatype = kFp32;
      t.floats = probabilities;
      t.shape = {1, static_cast<int64_t>(probabilities.size())};
    }
    outputs.push_back(std::move(t));
  }
  return outputs;
}

// A float as the JSON number with the fewest digits that reads back as the same float
// ("0.1", not the double 0.10000000149011612).
nlohmann::json short_number(float v) {
  char buf[32];
  const auto printed = std::to_chars(buf, buf + sizeof buf, v);
  double d = v;
  std::from_chars(buf, printed.ptr, d);
  return d;
}

}  // namespace

std::vector<std::string> classification_strings(std::span<const float> probabilities, int k,
                                                const std::vector<std::string>& labels) {
  std::vector<std::string> out;
  for (const ScoredClass& c : top_k_classes(probabilities, k, {})) {
    std::string s = std::to_string(c.score) + ":" + std::to_string(c.index);
    const auto i = static_cast<size_t>(c.index);
    if (i < labels.size() && !labels[i].empty()) s += ":" + labels[i];
    out.push_back(std::move(s));
  }
  return out;
}

inference::ModelInferResponse make_infer_response(const InferRequest& request, const ModelSignature& model,
                                                  std::span<const float> probabilities) {
  inference::ModelInferResponse response;
  response.set_model_name(model.name);
  response.set_model_version(model.version);
  response.set_id(request.id);
  for (const OutputTensor& t : build_outputs(request, model, probabilities)) {
    auto* out = response.add_outputs();
    out->set_name(t.name);
    out->set_datatype(std::string(t.datatype));
    for (int64_t d : t.shape) out->add_shape(d);
    std::string* raw = response.add_raw_output_contents();
    if (t.datatype == kBytes) {
      for (const std::string& s : t.strings) append_raw_bytes(*raw, s);
    } else {
      *raw = raw_from_floats(t.floats);
    }
  }
  return response;
}

nlohmann::json infer_response_json(const InferRequest& request, const ModelSignature& model,
                                   std::span<const float> probabilities) {
  nlohmann::json body = {{"model_name", model.name}};
  if (!model.version.empty()) body["model_version"] = model.version;
  if (!request.id.empty()) body["id"] = request.id;
  nlohmann::json outputs = nlohmann::json::array();
  for (const OutputTensor& t : build_outputs(request, model, probabilities)) {
    nlohmann::json data = nlohmann::json::array();
    if (t.datatype == kBytes) {
      for (const std::string& s : t.strings) data.push_back(s);
    } else {
      for (float v : t.floats) data.push_back(short_number(v));
    }
    outputs.push_back({{"name", t.name}, {"datatype", t.datatype}, {"shape", t.shape}, {"data", std::move(data)}});
  }
  body["outputs"] = std::move(outputs);
  return body;
}

}  // namespace tessera::kserve
