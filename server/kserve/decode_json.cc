#include "server/kserve/decode_json.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "server/kserve/base64.h"
#include "server/kserve/shared_memory_params.h"

namespace tessera::kserve {
namespace {

using nlohmann::json;

Status field_error(std::string_view field, const std::string& why) {
  return Status::invalid_argument(std::string(field) + ": " + why);
}

// The object at `key` of `parent`, or nullptr when absent; present but not an object is an error.
Result<const json*> optional_object(const json& parent, const char* key, const std::string& field) {
  const auto it = parent.find(key);
  if (it == parent.end()) return static_cast<const json*>(nullptr);
  if (!it->is_object()) return field_error(field, "must be an object");
  return &*it;
}

// Flattens the array `data` (row-major, nested at most `max_depth` arrays deep) into `out`.
Status flatten(const json& data, size_t max_depth, std::vector<const json*>& out, const std::string& field) {
  if (max_depth == 0) return field_error(field, "nested deeper than the shape");
  for (const json& element : data) {
    if (element.is_array()) {
      TESSERA_RETURN_IF_ERROR(flatten(element, max_depth - 1, out, field));
    } else {
      out.push_back(&element);
    }
  }
  return Status::ok();
}

// Thrown by parse_bounded's callback: the body is past a JsonBodyLimits bound.
class BoundExceeded : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// json::parse with the depth and value count checked at each parser event, so a body past them
// stops before its document grows: nlohmann builds the document as it goes.
json parse_bounded(std::string_view body, const JsonBodyLimits& bounds) {
  size_t values = 0;
  const json::parser_callback_t check = [&](int depth, json::parse_event_t event, json& /*parsed*/) {
    if (event == json::parse_event_t::key || event == json::parse_event_t::object_end ||
        event == json::parse_event_t::array_end) {
      return true;
    }
    if (static_cast<size_t>(depth) >= bounds.max_depth) {
      throw BoundExceeded("JSON nested deeper than " + std::to_string(bounds.max_depth) + " levels");
    }
    if (++values > bounds.max_values) {
      throw BoundExceeded("more than " + std::to_string(bounds.max_values) + " JSON values");
    }
    return true;
  };
  return json::parse(body, check);
}

std::string element_field(const std::string& field, size_t i) { return field + "[" + std::to_string(i) + "]"; }

Status decode_data(std::vector<InferInput>& images, const InputLayout& layout, const json& data, size_t rank,
                   const DecodeLimits& limits) {
  const std::string field = "inputs[0].data";
  if (!data.is_array()) return field_error(field, "must be an array");
  std::vector<const json*> elements;
  elements.reserve(layout.batch * layout.elements);
  TESSERA_RETURN_IF_ERROR(flatten(data, std::max<size_t>(rank, 1), elements, field));
  if (elements.size() != layout.batch * layout.elements) {
    return field_error(field, std::to_string(elements.size()) + " elements; the shape needs " +
                                  std::to_string(layout.batch * layout.elements));
  }
  switch (layout.kind) {
    case InputKind::kEncodedImage: {
      std::vector<std::vector<uint8_t>> files;
      for (size_t i = 0; i < elements.size(); ++i) {
        if (!elements[i]->is_string()) return field_error(element_field(field, i), "must be a base64 string");
        auto bytes = base64_decode(elements[i]->get_ref<const std::string&>());
        if (!bytes) return field_error(element_field(field, i), bytes.status().message());
        TESSERA_RETURN_IF_ERROR(check_encoded_image(*bytes, element_field(field, i), limits));
        files.push_back(std::move(bytes).value());
      }
      return set_encoded_images(images, layout, std::move(files), field, limits);
    }
    case InputKind::kFloatTensor: {
      std::vector<float> values;
      values.reserve(elements.size());
      for (size_t i = 0; i < elements.size(); ++i) {
        if (!elements[i]->is_number()) return field_error(element_field(field, i), "must be a number");
        values.push_back(elements[i]->get<float>());
      }
      return set_float_tensor(images, layout, values, field);
    }
    case InputKind::kPixels: {
      std::vector<uint8_t> values;
      values.reserve(elements.size());
      for (size_t i = 0; i < elements.size(); ++i) {
        const json& e = *elements[i];
        if (!e.is_number_integer() || e.get<int64_t>() < 0 || e.get<int64_t>() > 255 ||
            (e.is_number_unsigned() && e.get<uint64_t>() > 255)) {
          return field_error(element_field(field, i), "must be an integer 0..255");
        }
        values.push_back(static_cast<uint8_t>(e.get<int64_t>()));
      }
      return set_pixels(images, layout, values, field);
    }
  }
  return Status::internal("unreachable input kind");
}

Result<std::vector<int64_t>> decode_shape(const json& tensor) {
  const auto it = tensor.find("shape");
  if (it == tensor.end()) return field_error("inputs[0].shape", "missing");
  if (!it->is_array()) return field_error("inputs[0].shape", "must be an array of integers");
  std::vector<int64_t> shape;
  for (const json& d : *it) {
    if (!d.is_number_integer()) return field_error("inputs[0].shape", "must be an array of integers");
    if (d.is_number_unsigned() && d.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return field_error("inputs[0].shape", "dimension too large");
    }
    shape.push_back(d.get<int64_t>());
  }
  return shape;
}

// An integer parameter's value as int64 (a uint64 past its range is clamped), or an error.
Result<int64_t> integer_parameter(const json& value, const std::string& field) {
  if (!value.is_number_integer()) return field_error(field, "must be an integer");
  if (value.is_number_unsigned()) {
    return static_cast<int64_t>(std::min<uint64_t>(value.get<uint64_t>(), std::numeric_limits<int64_t>::max()));
  }
  return value.get<int64_t>();
}

// The input's "binary_data_size": how many bytes of the binary section are its data; nullopt
// when it has none.
Result<std::optional<uint64_t>> binary_data_size(const json* params) {
  const std::string field = "inputs[0].parameters.binary_data_size";
  if (params == nullptr || !params->contains("binary_data_size")) return std::optional<uint64_t>();
  TESSERA_ASSIGN_OR_RETURN(const int64_t size, integer_parameter(params->at("binary_data_size"), field));
  if (size < 0) return field_error(field, std::to_string(size) + "; must be >= 0");
  return std::optional<uint64_t>(static_cast<uint64_t>(size));
}

// Takes the input's binary data from the front of `binary` (the bytes after the JSON header).
Result<std::string_view> take_binary(std::optional<std::string_view>& binary, uint64_t size) {
  const std::string field = "inputs[0].parameters.binary_data_size";
  if (!binary) {
    return field_error(field, "binary data needs the Inference-Header-Content-Length header (the JSON's length)");
  }
  if (size > binary->size()) {
    return field_error(
        field, std::to_string(size) + " bytes, but " + std::to_string(binary->size()) + " follow the JSON header");
  }
  const std::string_view data = binary->substr(0, size);
  binary->remove_prefix(size);
  return data;
}

Status decode_input(std::vector<InferInput>& images, const json& tensor, const ModelSignature& model,
                    const DecodeLimits& limits, std::optional<std::string_view>& binary, const ShmRequest* shm) {
  if (!tensor.is_object()) return field_error("inputs[0]", "must be an object");
  const auto name = tensor.find("name");
  if (name == tensor.end() || !name->is_string()) return field_error("inputs[0].name", "missing or not a string");
  images.assign(1, InferInput{});
  images[0].name = name->get<std::string>();
  const auto datatype = tensor.find("datatype");
  if (datatype == tensor.end() || !datatype->is_string()) {
    return field_error("inputs[0].datatype", "missing or not a string");
  }
  TESSERA_ASSIGN_OR_RETURN(const std::vector<int64_t> shape, decode_shape(tensor));
  TESSERA_ASSIGN_OR_RETURN(const InputLayout layout,
                           input_layout(datatype->get_ref<const std::string&>(), shape, model, limits));

  TESSERA_ASSIGN_OR_RETURN(const json* params, optional_object(tensor, "parameters", "inputs[0].parameters"));
  // content_type only says how a BYTES element in JSON is encoded; tensors ignore it.
  const auto type = params != nullptr ? params->find("content_type") : json::const_iterator();
  if (params != nullptr && type != params->end() && layout.kind == InputKind::kEncodedImage) {
    if (!type->is_string() || type->get_ref<const std::string&>() != "base64") {
      return field_error("inputs[0].parameters.content_type", "must be \"base64\" (BYTES elements are base64 strings)");
    }
  }
  TESSERA_ASSIGN_OR_RETURN(const std::optional<uint64_t> binary_size, binary_data_size(params));
  const auto data = tensor.find("data");
  // An input in a system shared-memory region (shared_memory_params.h).
  TESSERA_ASSIGN_OR_RETURN(const auto input_shm, shm_ref(params, "inputs[0].parameters"));
  TESSERA_ASSIGN_OR_RETURN(const auto shm_bytes,
                           shm_input_bytes(shm, input_shm, data != tensor.end() || binary_size, "inputs[0]"));
  if (shm_bytes) {
    return set_from_raw(images, layout, *shm_bytes, false, "inputs[0].parameters.shared_memory_region", limits);
  }
  if (binary_size) {
    if (data != tensor.end()) {
      return field_error("inputs[0].data", "given with binary_data_size; send the data in one place");
    }
    TESSERA_ASSIGN_OR_RETURN(const std::string_view raw, take_binary(binary, *binary_size));
    return set_from_raw(images, layout, raw, false, "inputs[0] binary data", limits);
  }
  if (data == tensor.end()) return field_error("inputs[0].data", "missing");
  return decode_data(images, layout, *data, shape.size(), limits);
}

// The request's "parameters" (Triton's: binary_data_output, timeout, priority; others ignored).
Status decode_request_parameters(InferRequest& request, const json& body) {
  TESSERA_ASSIGN_OR_RETURN(const json* params, optional_object(body, "parameters", "parameters"));
  if (params == nullptr) return Status::ok();
  if (const auto binary = params->find("binary_data_output"); binary != params->end()) {
    if (!binary->is_boolean()) return field_error("parameters.binary_data_output", "must be true or false");
    request.binary_data_output = binary->get<bool>();
  }
  if (const auto timeout = params->find("timeout"); timeout != params->end()) {
    TESSERA_ASSIGN_OR_RETURN(const int64_t us, integer_parameter(*timeout, "parameters.timeout"));
    TESSERA_RETURN_IF_ERROR(set_timeout(request, us, "parameters.timeout"));
  }
  if (const auto priority = params->find("priority"); priority != params->end()) {
    TESSERA_ASSIGN_OR_RETURN(const int64_t p, integer_parameter(*priority, "parameters.priority"));
    TESSERA_RETURN_IF_ERROR(check_priority(p, "parameters.priority"));
  }
  return Status::ok();
}

Result<RequestedOutput> decode_output(const json& out, size_t index, const ModelSignature& model, ShmRequest* shm,
                                      size_t images) {
  const std::string field = "outputs[" + std::to_string(index) + "]";
  if (!out.is_object()) return field_error(field, "must be an object");
  const auto name = out.find("name");
  if (name == out.end() || !name->is_string()) return field_error(field + ".name", "missing or not a string");
  RequestedOutput requested{name->get<std::string>(), 0, std::nullopt, false};
  TESSERA_ASSIGN_OR_RETURN(const json* params, optional_object(out, "parameters", field + ".parameters"));
  if (params == nullptr) return requested;
  if (const auto binary = params->find("binary_data"); binary != params->end()) {
    if (!binary->is_boolean()) return field_error(field + ".parameters.binary_data", "must be true or false");
    requested.binary = binary->get<bool>();
  }
  if (const auto k = params->find("classification"); k != params->end()) {
    const std::string k_field = field + ".parameters.classification";
    TESSERA_ASSIGN_OR_RETURN(const int64_t count, integer_parameter(*k, k_field));
    TESSERA_ASSIGN_OR_RETURN(requested.classification, classification_count(count, k_field, model));
  }
  // An output into a system shared-memory region (a classification with one is refused there).
  TESSERA_ASSIGN_OR_RETURN(const auto output_shm, shm_ref(params, field + ".parameters"));
  TESSERA_RETURN_IF_ERROR(add_shm_output(shm, output_shm, requested, model, images, field));
  return requested;
}

}  // namespace

Result<InferRequest> decode_infer_request_json(const json& body, const ModelSignature& model,
                                               const DecodeLimits& limits, std::optional<std::string_view> binary,
                                               ShmRequest* shm) {
  if (!body.is_object()) return Status::invalid_argument("request body: must be a JSON object");
  InferRequest request;
  if (const auto id = body.find("id"); id != body.end()) {
    if (!id->is_string()) return field_error("id", "must be a string");
    request.id = id->get<std::string>();
  }
  TESSERA_RETURN_IF_ERROR(decode_request_parameters(request, body));

  const auto inputs = body.find("inputs");
  if (inputs == body.end() || !inputs->is_array()) return field_error("inputs", "missing or not an array");
  if (inputs->size() != 1) {
    return field_error("inputs",
                       std::to_string(inputs->size()) + " tensors; model '" + model.name + "' takes exactly one");
  }
  TESSERA_RETURN_IF_ERROR(decode_input(request.images, (*inputs)[0], model, limits, binary, shm));
  if (binary && !binary->empty()) {
    return Status::invalid_argument("request body: " + std::to_string(binary->size()) +
                                    " bytes after the inputs' binary data; binary_data_size must cover them all");
  }

  if (const auto outputs = body.find("outputs"); outputs != body.end()) {
    if (!outputs->is_array()) return field_error("outputs", "must be an array");
    for (size_t i = 0; i < outputs->size(); ++i) {
      TESSERA_ASSIGN_OR_RETURN(RequestedOutput o, decode_output((*outputs)[i], i, model, shm, request.images.size()));
      request.outputs.push_back(std::move(o));
    }
  }
  TESSERA_RETURN_IF_ERROR(check_requested_outputs(request.outputs, model));
  return request;
}

JsonBodyLimits json_body_limits(const ModelSignature& model, uint32_t multiple) {
  constexpr uint64_t kCharsPerNumber = 24;  // "-1.2345678901234567e-05,"
  constexpr uint64_t kEnvelopeBytes = 4096;
  const uint64_t elements = static_cast<uint64_t>(std::max(model.channels, 1)) *
                            static_cast<uint64_t>(std::max(model.height, 1)) *
                            static_cast<uint64_t>(std::max(model.width, 1));
  JsonBodyLimits out;
  out.max_bytes = multiple * (elements * kCharsPerNumber + kEnvelopeBytes);
  out.max_values = static_cast<size_t>(multiple * (elements + 1024));
  out.max_depth = kMaxJsonDepth;
  return out;
}

uint64_t infer_body_limit(const ModelSignature& model, uint32_t multiple) {
  const uint64_t elements = static_cast<uint64_t>(std::max(model.channels, 1)) *
                            static_cast<uint64_t>(std::max(model.height, 1)) *
                            static_cast<uint64_t>(std::max(model.width, 1));
  return json_body_limits(model, multiple).max_bytes +
         static_cast<uint64_t>(std::max(model.max_batch, 1)) * elements * 4;
}

Result<size_t> inference_header_length(std::string_view value, size_t body_size) {
  const std::string field = "Inference-Header-Content-Length";
  size_t length = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), length);
  if (value.empty() || error != std::errc() || end != value.data() + value.size()) {
    return Status::invalid_argument(field + ": '" + std::string(value.substr(0, 32)) + "' is not a number of bytes");
  }
  if (length > body_size) {
    return Status::invalid_argument(field + ": " + std::to_string(length) + " is past the body's " +
                                    std::to_string(body_size) + " bytes");
  }
  return length;
}

Result<InferRequest> decode_infer_request_body(std::string_view body, const ModelSignature& model,
                                               const DecodeLimits& limits, const JsonBodyLimits* json_limits,
                                               std::optional<std::string_view> header_length, ShmRequest* shm) {
  std::optional<std::string_view> binary;
  if (header_length) {
    TESSERA_ASSIGN_OR_RETURN(const size_t length, inference_header_length(*header_length, body.size()));
    binary = body.substr(length);
    body = body.substr(0, length);
  }
  const JsonBodyLimits derived = json_body_limits(model);
  const JsonBodyLimits& bounds = json_limits != nullptr ? *json_limits : derived;
  if (body.size() > bounds.max_bytes) {
    return Status::invalid_argument("request body: " + std::string(binary ? "the JSON header is " : "") +
                                    std::to_string(body.size()) + " bytes; model '" + model.name + "' takes at most " +
                                    std::to_string(bounds.max_bytes));
  }
  // nlohmann's lexer ends the input at a NUL byte, which would accept "{...}\0<anything>".
  if (const size_t nul = body.find('\0'); nul != std::string_view::npos) {
    return Status::invalid_argument("request body: not valid JSON (a NUL byte at byte " + std::to_string(nul) + ")");
  }
  json parsed;
  try {
    parsed = parse_bounded(body, bounds);
  } catch (const BoundExceeded& e) {
    return Status::invalid_argument(std::string("request body: ") + e.what());
  } catch (const json::parse_error& e) {
    return Status::invalid_argument("request body: not valid JSON (error at byte " + std::to_string(e.byte) + ")");
  } catch (const json::exception& e) {
    // A number past double's range ("1e400") is out_of_range, not parse_error (fuzz_kserve_json):
    // uncaught, it ended the daemon.
    return Status::invalid_argument(std::string("request body: not valid JSON (") + e.what() + ")");
  }
  return decode_infer_request_json(parsed, model, limits, binary, shm);
}

}  // namespace tessera::kserve
