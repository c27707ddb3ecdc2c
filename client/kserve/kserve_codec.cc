#include "client/kserve/kserve_codec.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <cstring>

namespace tessera::client::kserve {
namespace {

using nlohmann::json;

// Standard base64 with padding: how a BYTES element travels in a JSON "data" array.
std::string base64(std::string_view in) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (uint32_t{static_cast<uint8_t>(in[i])} << 16) |
                       (uint32_t{static_cast<uint8_t>(in[i + 1])} << 8) | static_cast<uint8_t>(in[i + 2]);
    for (int shift = 18; shift >= 0; shift -= 6) out += kAlphabet[(v >> shift) & 63];
  }
  if (i < in.size()) {
    uint32_t v = uint32_t{static_cast<uint8_t>(in[i])} << 16;
    if (i + 1 < in.size()) v |= uint32_t{static_cast<uint8_t>(in[i + 1])} << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// The input's elements as JSON "data": numbers for FP32, base64 text for BYTES.
json json_data(const InputTensor& input) {
  json data = json::array();
  if (input.datatype == "FP32") {
    for (size_t at = 0; at + 4 <= input.raw.size(); at += 4) {
      float v = 0;
      std::memcpy(&v, input.raw.data() + at, 4);
      data.push_back(v);
    }
    return data;
  }
  auto elements = split_bytes_elements(input.raw);
  if (elements)
    for (const std::string& e : *elements) data.push_back(base64(e));
  return data;
}

ScoredClass to_class(const std::string& text, Status& error) {
  auto parsed = parse_classification(text);
  if (!parsed) {
    if (error.is_ok()) error = parsed.status();
    return {};
  }
  return *parsed;
}

Result<std::vector<std::string>> json_strings(const json& output) {
  const auto data = output.find("data");
  if (data == output.end() || !data->is_array())
    return Status::invalid_argument("output \"" + output.value("name", "") + "\" has no data");
  std::vector<std::string> out;
  for (const json& v : *data) {
    if (!v.is_string()) return Status::invalid_argument("classification output data are not strings");
    out.push_back(v.get<std::string>());
  }
  return out;
}

std::string json_string(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The binary_data_size of `output`, 0 when it has none.
Result<size_t> binary_size(const json& output) {
  const auto params = output.find("parameters");
  if (params == output.end() || !params->is_object()) return size_t{0};
  const auto size = params->find("binary_data_size");
  if (size == params->end()) return size_t{0};
  if (!size->is_number_unsigned()) return Status::invalid_argument("binary_data_size is not a non-negative integer");
  return size->get<size_t>();
}

}  // namespace

void append_bytes_element(std::string& raw, std::string_view element) {
  const auto n = static_cast<uint32_t>(element.size());
  const char prefix[4] = {static_cast<char>(n & 0xff), static_cast<char>((n >> 8) & 0xff),
                          static_cast<char>((n >> 16) & 0xff), static_cast<char>((n >> 24) & 0xff)};
  raw.append(prefix, 4);
  raw.append(element);
}

Result<std::vector<std::string>> split_bytes_elements(std::string_view raw) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < raw.size()) {
    if (raw.size() - at < 4) return Status::invalid_argument("BYTES data: a length prefix is cut short");
    uint32_t n = 0;
    for (int i = 3; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(raw[at + static_cast<size_t>(i)]);
    at += 4;
    if (n > raw.size() - at) return Status::invalid_argument("BYTES data: an element runs past the end");
    out.emplace_back(raw.substr(at, n));
    at += n;
  }
  return out;
}

Result<ScoredClass> parse_classification(std::string_view text) {
  const size_t first = text.find(':');
  const size_t second = first == std::string_view::npos ? first : text.find(':', first + 1);
  const std::string_view score = text.substr(0, first);
  const std::string_view index =
      first == std::string_view::npos ? std::string_view() : text.substr(first + 1, second - first - 1);
  ScoredClass out;
  const auto s = std::from_chars(score.data(), score.data() + score.size(), out.score);
  const auto i = std::from_chars(index.data(), index.data() + index.size(), out.index);
  if (first == std::string_view::npos || s.ec != std::errc() || s.ptr != score.data() + score.size() ||
      i.ec != std::errc() || i.ptr != index.data() + index.size()) {
    return Status::invalid_argument("not a classification \"score:index[:label]\": \"" + std::string(text) + "\"");
  }
  if (second != std::string_view::npos) out.label = std::string(text.substr(second + 1));
  return out;
}

inference::ModelInferRequest grpc_request(const InferSpec& spec) {
  inference::ModelInferRequest request;
  request.set_model_name(spec.model);
  request.set_model_version(spec.version);
  request.set_id(spec.id);
  auto* input = request.add_inputs();
  input->set_name(spec.input.name);
  input->set_datatype(spec.input.datatype);
  for (int64_t d : spec.input.shape) input->add_shape(d);
  request.add_raw_input_contents(spec.input.raw);
  auto* output = request.add_outputs();
  output->set_name(spec.output_name);
  (*output->mutable_parameters())["classification"].set_int64_param(spec.classification);
  return request;
}

Result<InferAnswer> grpc_answer(const inference::ModelInferResponse& response, const std::string& output_name) {
  InferAnswer answer{response.model_name(), response.model_version(), response.id(), {}};
  for (int i = 0; i < response.outputs_size(); ++i) {
    const auto& output = response.outputs(i);
    if (output.name() != output_name) continue;
    if (output.datatype() != "BYTES")
      return Status::invalid_argument("output " + output_name + " is " + output.datatype() + ", not BYTES");
    std::vector<std::string> strings;
    if (i < response.raw_output_contents_size()) {
      auto split = split_bytes_elements(response.raw_output_contents(i));
      if (!split) return split.status();
      strings = std::move(split).value();
    } else {
      strings.assign(output.contents().bytes_contents().begin(), output.contents().bytes_contents().end());
    }
    Status error;
    for (const std::string& s : strings) answer.classes.push_back(to_class(s, error));
    if (!error.is_ok()) return error;
    return answer;
  }
  return Status::invalid_argument("the response has no output named " + output_name);
}

HttpBody http_request(const InferSpec& spec, bool binary_input, bool binary_output) {
  json input = {{"name", spec.input.name}, {"shape", spec.input.shape}, {"datatype", spec.input.datatype}};
  if (binary_input) {
    input["parameters"] = {{"binary_data_size", spec.input.raw.size()}};
  } else {
    input["data"] = json_data(spec.input);
  }
  json output = {{"name", spec.output_name}, {"parameters", {{"classification", spec.classification}}}};
  if (binary_output) output["parameters"]["binary_data"] = true;
  json header = {{"inputs", json::array({std::move(input)})}, {"outputs", json::array({std::move(output)})}};
  if (!spec.id.empty()) header["id"] = spec.id;
  HttpBody body;
  body.bytes = header.dump(-1, ' ', false, json::error_handler_t::replace);
  if (binary_input) {
    body.header_length = body.bytes.size();
    body.bytes += spec.input.raw;
  }
  return body;
}

Result<InferAnswer> http_answer(std::string_view body, std::optional<size_t> header_length,
                                const std::string& output_name) {
  const size_t json_length = header_length.value_or(body.size());
  if (json_length > body.size())
    return Status::invalid_argument("Inference-Header-Content-Length " + std::to_string(json_length) +
                                    " is past the body's " + std::to_string(body.size()) + " bytes");
  const json header = json::parse(body.substr(0, json_length), nullptr, false);
  if (!header.is_object() || !header.contains("outputs") || !header["outputs"].is_array())
    return Status::invalid_argument("the response is not a KServe v2 inference response");
  InferAnswer answer{
      json_string(header, "model_name"), json_string(header, "model_version"), json_string(header, "id"), {}};
  size_t at = json_length;  // binary outputs follow the JSON in the outputs' order
  for (const json& output : header["outputs"]) {
    if (!output.is_object()) return Status::invalid_argument("an output is not an object");
    auto size = binary_size(output);
    if (!size) return size.status();
    if (*size > body.size() - at) return Status::invalid_argument("an output's binary_data_size runs past the body");
    const std::string_view binary = body.substr(at, *size);
    at += *size;
    if (json_string(output, "name") != output_name) continue;
    if (json_string(output, "datatype") != "BYTES")
      return Status::invalid_argument("output " + output_name + " is not BYTES");
    auto strings = *size > 0 ? split_bytes_elements(binary) : json_strings(output);
    if (!strings) return strings.status();
    Status error;
    for (const std::string& s : *strings) answer.classes.push_back(to_class(s, error));
    if (!error.is_ok()) return error;
    return answer;
  }
  return Status::invalid_argument("the response has no output named " + output_name);
}

std::string http_error_message(std::string_view body) {
  const json parsed = json::parse(body, nullptr, false);
  if (parsed.is_object() && parsed.contains("error") && parsed["error"].is_string())
    return parsed["error"].get<std::string>();
  return std::string(body.substr(0, 200));
}

}  // namespace tessera::client::kserve
