#include "server/kserve/infer_request.h"

#include <algorithm>
#include <cmath>

namespace tessera::kserve {
namespace {

constexpr std::string_view kShapeField = "inputs[0].shape";

Status shape_error(std::span<const int64_t> shape, const std::string& why) {
  return Status::invalid_argument(std::string(kShapeField) + ": " + shape_string(shape) + " " + why);
}

// Drops a leading batch dimension of 1 when the shape has `rank` + 1 dimensions.
std::span<const int64_t> without_batch(std::span<const int64_t> shape, size_t rank) {
  if (shape.size() == rank + 1 && shape[0] == 1) return shape.subspan(1);
  return shape;
}

std::string expected_fp32_shape(const ModelSignature& m) {
  const int64_t dims[] = {1, m.channels, m.height, m.width};
  return shape_string(dims);
}

Status count_matches(const InputLayout& layout, size_t count, std::string_view field) {
  if (count == layout.elements) return Status::ok();
  return Status::invalid_argument(std::string(field) + ": " + std::to_string(count) + " elements; the shape needs " +
                                  std::to_string(layout.elements));
}

}  // namespace

int InferRequest::top_k() const {
  int k = 0;
  for (const RequestedOutput& o : outputs) k = std::max(k, o.classification);
  return k;
}

std::string shape_string(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

Result<InputLayout> input_layout(std::string_view datatype, std::span<const int64_t> shape, const ModelSignature& model,
                                 const DecodeLimits& limits) {
  for (int64_t d : shape) {
    if (d < 0) return shape_error(shape, "has a negative dimension");
  }
  InputLayout layout;
  if (datatype == kBytes) {
    const bool one = (shape.size() == 1 || shape.size() == 2) &&
                     std::all_of(shape.begin(), shape.end(), [](int64_t d) { return d == 1; });
    if (!one) return shape_error(shape, "for BYTES; send one image, shape [1]");
    layout.kind = InputKind::kEncodedImage;
    layout.elements = 1;
    return layout;
  }
  if (datatype == kFp32) {
    const auto chw = without_batch(shape, 3);
    if (chw.size() != 3 || chw[0] != model.channels || chw[1] != model.height || chw[2] != model.width) {
      return shape_error(shape, "does not match model '" + model.name + "' input " + expected_fp32_shape(model) +
                                    " (or [C,H,W] without the batch dimension)");
    }
    layout.kind = InputKind::kFloatTensor;
    layout.elements =
        static_cast<size_t>(model.channels) * static_cast<size_t>(model.height) * static_cast<size_t>(model.width);
    return layout;
  }
  if (datatype == kUint8) {
    const auto hwc = without_batch(shape, 3);
    if (hwc.size() != 3) return shape_error(shape, "for UINT8; want [1,H,W,C] or [H,W,C]");
    if (hwc[2] != 1 && hwc[2] != 3) return shape_error(shape, "has C = " + std::to_string(hwc[2]) + "; want 1 or 3");
    if (hwc[0] < 1 || hwc[1] < 1 || hwc[0] > limits.max_side || hwc[1] > limits.max_side) {
      return shape_error(shape, "has a height or width outside 1.." + std::to_string(limits.max_side));
    }
    if (hwc[0] * hwc[1] > limits.max_pixels) {
      return shape_error(shape, "has more than " + std::to_string(limits.max_pixels) + " pixels");
    }
    layout.kind = InputKind::kPixels;
    layout.height = static_cast<int>(hwc[0]);
    layout.width = static_cast<int>(hwc[1]);
    layout.channels = static_cast<int>(hwc[2]);
    layout.elements = static_cast<size_t>(hwc[0] * hwc[1] * hwc[2]);
    return layout;
  }
  return Status::invalid_argument("inputs[0].datatype: '" + std::string(datatype) +
                                  "' is not accepted; send BYTES (a JPEG or PNG file), FP32 " +
                                  expected_fp32_shape(model) + " or UINT8 [1,H,W,C]");
}

Status check_encoded_image(std::span<const uint8_t> bytes, std::string_view field, const DecodeLimits& limits) {
  const std::string f(field);
  if (bytes.empty()) return Status::invalid_argument(f + ": the BYTES element is empty; send a JPEG or PNG file");
  if (static_cast<int64_t>(bytes.size()) > limits.max_bytes) {
    return Status::invalid_argument(f + ": the image is " + std::to_string(bytes.size()) + " bytes; the limit is " +
                                    std::to_string(limits.max_bytes));
  }
  if (detect_image_format(bytes) == ImageFormat::kUnknown) {
    return Status::invalid_argument(f + ": the BYTES element is not a JPEG or PNG file");
  }
  return Status::ok();
}

Status set_float_tensor(InferInput& input, const InputLayout& layout, std::vector<float> values,
                        std::string_view field) {
  TESSERA_RETURN_IF_ERROR(count_matches(layout, values.size(), field));
  const auto bad = std::find_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); });
  if (bad != values.end()) {
    return Status::invalid_argument(std::string(field) + ": element " + std::to_string(bad - values.begin()) +
                                    " is not a finite number");
  }
  input.kind = InputKind::kFloatTensor;
  input.tensor = std::move(values);
  return Status::ok();
}

Status set_pixels(InferInput& input, const InputLayout& layout, std::vector<uint8_t> values, std::string_view field) {
  TESSERA_RETURN_IF_ERROR(count_matches(layout, values.size(), field));
  input.kind = InputKind::kPixels;
  input.pixels.width = layout.width;
  input.pixels.height = layout.height;
  input.pixels.channels = layout.channels;
  input.pixels.pixels = std::move(values);
  return Status::ok();
}

Result<int> classification_count(int64_t k, std::string_view field, const ModelSignature& model) {
  if (k < 1) {
    return Status::invalid_argument(std::string(field) + ": " + std::to_string(k) +
                                    "; classification must be an integer >= 1");
  }
  return static_cast<int>(std::min<int64_t>(k, std::max(model.num_classes, 0)));
}

Status check_requested_outputs(const std::vector<RequestedOutput>& outputs, const ModelSignature& model) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string field = "outputs[" + std::to_string(i) + "].name";
    if (outputs[i].name != model.output_name) {
      return Status::invalid_argument(field + ": model '" + model.name + "' has no output '" + outputs[i].name +
                                      "'; its output is '" + model.output_name + "'");
    }
    for (size_t j = 0; j < i; ++j) {
      if (outputs[j].name == outputs[i].name) {
        return Status::invalid_argument(field + ": output '" + outputs[i].name + "' is requested twice");
      }
    }
  }
  return Status::ok();
}

Status check_model_version(const ModelSignature& model, std::string_view version) {
  if (version.empty() || version == model.version) return Status::ok();
  return Status::not_found("model '" + model.name + "' has no version '" + std::string(version) +
                           "'; its version is '" + model.version + "'");
}

}  // namespace tessera::kserve
