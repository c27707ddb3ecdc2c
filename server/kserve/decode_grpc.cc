#include "server/kserve/decode_grpc.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "server/kserve/raw_contents.h"
#include "server/kserve/shared_memory_params.h"

namespace tessera::kserve {
namespace {

using inference::InferParameter;
using inference::InferTensorContents;
using inference::ModelInferRequest;

constexpr std::string_view kContentsField = "inputs[0].contents";
constexpr std::string_view kRawField = "raw_input_contents[0]";

size_t typed_elements(const InferTensorContents& c) {
  const int counts[] = {c.bool_contents_size(), c.int_contents_size(),    c.int64_contents_size(),
                        c.uint_contents_size(), c.uint64_contents_size(), c.fp32_contents_size(),
                        c.fp64_contents_size(), c.bytes_contents_size()};
  size_t total = 0;
  for (const int n : counts) total += static_cast<size_t>(n);
  return total;
}

// "base64" when the input says its BYTES element is base64 text; "" when it says nothing.
Result<std::string> content_type(const ModelInferRequest::InferInputTensor& tensor) {
  const auto it = tensor.parameters().find("content_type");
  if (it == tensor.parameters().end()) return std::string();
  if (it->second.parameter_choice_case() != InferParameter::kStringParam) {
    return Status::invalid_argument("inputs[0].parameters.content_type: must be a string_param");
  }
  const std::string& value = it->second.string_param();
  if (value != "base64") {
    return Status::invalid_argument("inputs[0].parameters.content_type: '" + value +
                                    "' is not accepted; leave it out (raw bytes) or say 'base64'");
  }
  return value;
}

Status decode_typed(std::vector<InferInput>& images, const InputLayout& layout, const InferTensorContents& c,
                    bool base64, const DecodeLimits& limits) {
  const std::string field(kContentsField);
  switch (layout.kind) {
    case InputKind::kEncodedImage: {
      std::string raw;  // the elements in the raw layout, so both forms decode alike
      for (const std::string& element : c.bytes_contents()) append_raw_bytes(raw, element);
      return set_from_raw(images, layout, raw, base64, field + ".bytes_contents", limits);
    }
    case InputKind::kFloatTensor:
      return set_float_tensor(images, layout, {c.fp32_contents().data(), static_cast<size_t>(c.fp32_contents_size())},
                              field + ".fp32_contents");
    case InputKind::kPixels: {
      std::vector<uint8_t> pixels;
      pixels.reserve(static_cast<size_t>(c.uint_contents_size()));
      for (int i = 0; i < c.uint_contents_size(); ++i) {
        if (c.uint_contents(i) > 255) {
          return Status::invalid_argument(field + ".uint_contents[" + std::to_string(i) +
                                          "]: " + std::to_string(c.uint_contents(i)) + " is not a UINT8 value");
        }
        pixels.push_back(static_cast<uint8_t>(c.uint_contents(i)));
      }
      return set_pixels(images, layout, pixels, field + ".uint_contents");
    }
  }
  return Status::internal("unreachable input kind");
}

// An integer parameter (int64_param or uint64_param; past int64 clamped), or an error.
Result<int64_t> integer_parameter(const InferParameter& p, const std::string& field) {
  if (p.parameter_choice_case() == InferParameter::kInt64Param) return p.int64_param();
  if (p.parameter_choice_case() == InferParameter::kUint64Param) {
    return static_cast<int64_t>(std::min<uint64_t>(p.uint64_param(), std::numeric_limits<int64_t>::max()));
  }
  return Status::invalid_argument(field + ": must be an integer (int64_param)");
}

// The request's parameters Triton reads: timeout and priority; others are ignored.
Status decode_request_parameters(InferRequest& out, const ModelInferRequest& request) {
  const auto& params = request.parameters();
  if (const auto it = params.find("timeout"); it != params.end()) {
    TESSERA_ASSIGN_OR_RETURN(const int64_t us, integer_parameter(it->second, "parameters.timeout"));
    TESSERA_RETURN_IF_ERROR(set_timeout(out, us, "parameters.timeout"));
  }
  if (const auto it = params.find("priority"); it != params.end()) {
    TESSERA_ASSIGN_OR_RETURN(const int64_t p, integer_parameter(it->second, "parameters.priority"));
    TESSERA_RETURN_IF_ERROR(check_priority(p, "parameters.priority"));
  }
  return Status::ok();
}

Result<RequestedOutput> decode_output(const ModelInferRequest::InferRequestedOutputTensor& out, size_t index,
                                      const ModelSignature& model) {
  RequestedOutput requested{out.name(), 0, std::nullopt, false};
  const auto it = out.parameters().find("classification");
  if (it == out.parameters().end()) return requested;
  const std::string field = "outputs[" + std::to_string(index) + "].parameters.classification";
  TESSERA_ASSIGN_OR_RETURN(const int64_t k, integer_parameter(it->second, field));
  TESSERA_ASSIGN_OR_RETURN(requested.classification, classification_count(k, field, model));
  return requested;
}

}  // namespace

Result<InferRequest> decode_infer_request(const ModelInferRequest& request, const ModelSignature& model,
                                          const DecodeLimits& limits, ShmRequest* shm) {
  TESSERA_RETURN_IF_ERROR(check_model_version(model, request.model_version()));
  if (request.inputs_size() != 1) {
    return Status::invalid_argument("inputs: " + std::to_string(request.inputs_size()) + " tensors; model '" +
                                    model.name + "' takes exactly one");
  }
  const auto& tensor = request.inputs(0);
  const bool raw = request.raw_input_contents_size() > 0;
  if (raw && request.raw_input_contents_size() != request.inputs_size()) {
    return Status::invalid_argument("raw_input_contents: " + std::to_string(request.raw_input_contents_size()) +
                                    " entries for 1 input");
  }
  if (raw && tensor.has_contents() && typed_elements(tensor.contents()) > 0) {
    return Status::invalid_argument("inputs[0].contents: set together with raw_input_contents; use one of them");
  }
  const std::span<const int64_t> shape(tensor.shape().data(), static_cast<size_t>(tensor.shape_size()));
  TESSERA_ASSIGN_OR_RETURN(const InputLayout layout, input_layout(tensor.datatype(), shape, model, limits));
  // content_type only says how a BYTES element is encoded; tensors ignore it.
  std::string type;
  if (layout.kind == InputKind::kEncodedImage) {
    TESSERA_ASSIGN_OR_RETURN(type, content_type(tensor));
  }

  InferRequest out;
  out.id = request.id();
  TESSERA_RETURN_IF_ERROR(decode_request_parameters(out, request));
  out.images.assign(1, InferInput{});
  out.images[0].name = tensor.name();
  const bool base64 = type == "base64";
  // An input in a system shared-memory region (shared_memory_params.h).
  TESSERA_ASSIGN_OR_RETURN(const auto input_shm, shm_ref(tensor.parameters(), "inputs[0].parameters"));
  TESSERA_ASSIGN_OR_RETURN(const auto shm_bytes,
                           shm_input_bytes(shm, input_shm, raw || typed_elements(tensor.contents()) > 0, "inputs[0]"));
  TESSERA_RETURN_IF_ERROR(
      shm_bytes
          ? set_from_raw(out.images, layout, *shm_bytes, false, "inputs[0].parameters.shared_memory_region", limits)
      : raw ? set_from_raw(out.images, layout, request.raw_input_contents(0), base64, kRawField, limits)
            : decode_typed(out.images, layout, tensor.contents(), base64, limits));
  for (int i = 0; i < request.outputs_size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(RequestedOutput o, decode_output(request.outputs(i), static_cast<size_t>(i), model));
    // An output into a system shared-memory region.
    const std::string field = "outputs[" + std::to_string(i) + "]";
    TESSERA_ASSIGN_OR_RETURN(const auto output_shm, shm_ref(request.outputs(i).parameters(), field + ".parameters"));
    TESSERA_RETURN_IF_ERROR(add_shm_output(shm, output_shm, o, model, out.images.size(), field));
    out.outputs.push_back(std::move(o));
  }
  TESSERA_RETURN_IF_ERROR(check_requested_outputs(out.outputs, model));
  return out;
}

}  // namespace tessera::kserve
