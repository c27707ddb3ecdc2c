#include "server/kserve/infer_response.h"

#include <nlohmann/json.hpp>

#include <algorithm>
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
  std::vector<float> floats;         // FP32
  std::vector<std::string> strings;  // BYTES
  bool binary = false;               // HTTP: sent as binary data
  bool shared_memory = false;        // written into a region: no data in the response
};

std::vector<OutputTensor> build_outputs(const InferRequest& request, const ModelSignature& model,
                                        const ImageScores& scores) {
  std::vector<RequestedOutput> wanted = request.outputs;
  if (wanted.empty()) wanted.push_back({model.output_name, 0, std::nullopt, false});
  const auto rows = static_cast<int64_t>(scores.size());
  std::vector<OutputTensor> outputs;
  for (const RequestedOutput& o : wanted) {
    OutputTensor t;
    t.name = o.name;
    t.binary = request.binary(o);
    t.shared_memory = o.shared_memory;
    if (o.classification > 0) {
      t.datatype = kBytes;
      for (const std::vector<float>& image : scores) {
        for (std::string& s : classification_strings(image, o.classification, model.labels)) {
          t.strings.push_back(std::move(s));
        }
      }
      t.shape = {rows, rows > 0 ? static_cast<int64_t>(t.strings.size()) / rows : 0};
    } else {
      t.datatype = kFp32;
      for (const std::vector<float>& image : scores) t.floats.insert(t.floats.end(), image.begin(), image.end());
      t.shape = {rows, scores.empty() ? 0 : static_cast<int64_t>(scores[0].size())};
    }
    outputs.push_back(std::move(t));
  }
  return outputs;
}

// The tensor's data in the raw layout.
std::string raw_data(const OutputTensor& t) {
  if (t.datatype != kBytes) return raw_from_floats(t.floats);
  std::string raw;
  for (const std::string& s : t.strings) append_raw_bytes(raw, s);
  return raw;
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
                                                  const ImageScores& scores) {
  inference::ModelInferResponse response;
  response.set_model_name(model.name);
  response.set_model_version(model.version);
  response.set_id(request.id);
  for (const OutputTensor& t : build_outputs(request, model, scores)) {
    auto* out = response.add_outputs();
    out->set_name(t.name);
    out->set_datatype(std::string(t.datatype));
    for (int64_t d : t.shape) out->add_shape(d);
    *response.add_raw_output_contents() = t.shared_memory ? std::string() : raw_data(t);
  }
  return response;
}

namespace {

// The response's JSON; the outputs asked as binary get binary_data_size and their bytes go to
// `binary` (when null, every output is JSON data).
nlohmann::json response_json(const InferRequest& request, const ModelSignature& model, const ImageScores& scores,
                             std::string* binary) {
  nlohmann::json body = {{"model_name", model.name}};
  if (!model.version.empty()) body["model_version"] = model.version;
  if (!request.id.empty()) body["id"] = request.id;
  nlohmann::json outputs = nlohmann::json::array();
  for (const OutputTensor& t : build_outputs(request, model, scores)) {
    nlohmann::json out = {{"name", t.name}, {"datatype", t.datatype}, {"shape", t.shape}};
    if (t.shared_memory) {
      // The data went into the output's region.
    } else if (binary != nullptr && t.binary) {
      const std::string raw = raw_data(t);
      out["parameters"] = {{"binary_data_size", raw.size()}};
      binary->append(raw);
    } else {
      nlohmann::json data = nlohmann::json::array();
      for (const std::string& s : t.strings) data.push_back(s);
      for (float v : t.floats) data.push_back(short_number(v));
      out["data"] = std::move(data);
    }
    outputs.push_back(std::move(out));
  }
  body["outputs"] = std::move(outputs);
  return body;
}

}  // namespace

nlohmann::json infer_response_json(const InferRequest& request, const ModelSignature& model,
                                   const ImageScores& scores) {
  return response_json(request, model, scores, nullptr);
}

HttpInferBody infer_response_http(const InferRequest& request, const ModelSignature& model, const ImageScores& scores) {
  std::string binary;
  HttpInferBody out;
  // Replace, not throw, on invalid UTF-8 (labels come from files), as make_json_response does.
  out.body =
      response_json(request, model, scores, &binary).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  out.json_length = out.body.size();
  out.binary = !binary.empty();
  out.body += binary;
  return out;
}

}  // namespace tessera::kserve
