#include "server/kserve/infer_request.h"

#include <algorithm>
#include <cmath>

#include "server/kserve/base64.h"
#include "server/kserve/raw_contents.h"

namespace tessera::kserve {
namespace {

constexpr std::string_view kShapeField = "inputs[0].shape";

Status shape_error(std::span<const int64_t> shape, const std::string& why) {
  return Status::invalid_argument(std::string(kShapeField) + ": " + shape_string(shape) + " " + why);
}

std::string expected_fp32_shape(const ModelSignature& m) {
  const int64_t dims[] = {1, m.channels, m.height, m.width};
  return shape_string(dims);
}

Status count_matches(const InputLayout& layout, size_t count, std::string_view field) {
  const size_t want = layout.batch * layout.elements;
  if (count == want) return Status::ok();
  return Status::invalid_argument(std::string(field) + ": " + std::to_string(count) + " elements; the shape needs " +
                                  std::to_string(want));
}

// "field[i]": the tensor's i-th element.
std::string element_field(std::string_view field, size_t i) {
  return std::string(field) + "[" + std::to_string(i) + "]";
}

// The batch of a shape whose image part has `rank` dimensions: its first dimension when it has
// rank + 1 dimensions, 1 when it has `rank`; checked against the model's max batch.
Result<size_t> batch_of(std::span<const int64_t> shape, size_t rank, const ModelSignature& model) {
  if (shape.size() == rank) return size_t{1};
  if (shape.size() != rank + 1) return size_t{0};
  if (shape[0] < 1) return shape_error(shape, "is a batch of 0 images; send at least one");
  if (shape[0] > model.max_batch) {
    return shape_error(shape, "is a batch of " + std::to_string(shape[0]) + " images; model '" + model.name +
                                  "' takes at most " + std::to_string(model.max_batch) + " (its max batch)");
  }
  return static_cast<size_t>(shape[0]);
}

Result<InputLayout> bytes_layout(std::span<const int64_t> shape, const ModelSignature& model) {
  if (shape.empty() || shape.size() > 2 || (shape.size() == 2 && shape[1] != 1)) {
    return shape_error(shape, "for BYTES; send [N] or [N,1] images, N up to " + std::to_string(model.max_batch));
  }
  InputLayout layout;
  TESSERA_ASSIGN_OR_RETURN(layout.batch, batch_of(shape.first(1), 0, model));
  layout.kind = InputKind::kEncodedImage;
  layout.elements = 1;
  return layout;
}

Result<InputLayout> fp32_layout(std::span<const int64_t> shape, const ModelSignature& model) {
  InputLayout layout;
  TESSERA_ASSIGN_OR_RETURN(layout.batch, batch_of(shape, 3, model));
  const auto chw = shape.last(std::min<size_t>(shape.size(), 3));
  if (layout.batch == 0 || chw[0] != model.channels || chw[1] != model.height || chw[2] != model.width) {
    return shape_error(shape, "does not match model '" + model.name + "' input " + expected_fp32_shape(model) +
                                  " (N up to " + std::to_string(model.max_batch) + ", or [C,H,W] for one image)");
  }
  layout.kind = InputKind::kFloatTensor;
  layout.elements =
      static_cast<size_t>(model.channels) * static_cast<size_t>(model.height) * static_cast<size_t>(model.width);
  return layout;
}

Result<InputLayout> uint8_layout(std::span<const int64_t> shape, const ModelSignature& model,
                                 const DecodeLimits& limits) {
  InputLayout layout;
  TESSERA_ASSIGN_OR_RETURN(layout.batch, batch_of(shape, 3, model));
  if (layout.batch == 0) return shape_error(shape, "for UINT8; want [N,H,W,C] or [H,W,C]");
  const auto hwc = shape.last(3);
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

// `images` resized to the layout's batch, each named like the first.
void size_batch(std::vector<InferInput>& images, const InputLayout& layout) {
  const std::string name = images.empty() ? std::string() : images[0].name;
  images.resize(layout.batch);
  for (InferInput& image : images) image.name = name;
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
  if (datatype == kBytes) return bytes_layout(shape, model);
  if (datatype == kFp32) return fp32_layout(shape, model);
  if (datatype == kUint8) return uint8_layout(shape, model, limits);
  return Status::invalid_argument("inputs[0].datatype: '" + std::string(datatype) +
                                  "' is not accepted; send BYTES (JPEG or PNG files), FP32 " +
                                  expected_fp32_shape(model) + " or UINT8 [N,H,W,C]");
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

Status set_float_tensor(std::vector<InferInput>& images, const InputLayout& layout, std::span<const float> values,
                        std::string_view field) {
  TESSERA_RETURN_IF_ERROR(count_matches(layout, values.size(), field));
  const auto bad = std::find_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); });
  if (bad != values.end()) {
    return Status::invalid_argument(std::string(field) + ": element " + std::to_string(bad - values.begin()) +
                                    " is not a finite number");
  }
  size_batch(images, layout);
  for (size_t i = 0; i < layout.batch; ++i) {
    images[i].kind = InputKind::kFloatTensor;
    const auto image = values.subspan(i * layout.elements, layout.elements);
    images[i].tensor.assign(image.begin(), image.end());
  }
  return Status::ok();
}

Status set_pixels(std::vector<InferInput>& images, const InputLayout& layout, std::span<const uint8_t> values,
                  std::string_view field) {
  TESSERA_RETURN_IF_ERROR(count_matches(layout, values.size(), field));
  size_batch(images, layout);
  for (size_t i = 0; i < layout.batch; ++i) {
    InferInput& input = images[i];
    input.kind = InputKind::kPixels;
    input.pixels.width = layout.width;
    input.pixels.height = layout.height;
    input.pixels.channels = layout.channels;
    const auto image = values.subspan(i * layout.elements, layout.elements);
    input.pixels.pixels.assign(image.begin(), image.end());
  }
  return Status::ok();
}

Status set_encoded_images(std::vector<InferInput>& images, const InputLayout& layout,
                          std::vector<std::vector<uint8_t>> elements, std::string_view field,
                          const DecodeLimits& limits) {
  TESSERA_RETURN_IF_ERROR(count_matches(layout, elements.size(), field));
  for (size_t i = 0; i < elements.size(); ++i) {
    TESSERA_RETURN_IF_ERROR(check_encoded_image(elements[i], element_field(field, i), limits));
  }
  size_batch(images, layout);
  for (size_t i = 0; i < layout.batch; ++i) {
    images[i].kind = InputKind::kEncodedImage;
    images[i].encoded_image = std::move(elements[i]);
  }
  return Status::ok();
}

Status set_from_raw(std::vector<InferInput>& images, const InputLayout& layout, std::string_view raw, bool base64,
                    std::string_view field, const DecodeLimits& limits) {
  const std::string f(field);
  switch (layout.kind) {
    case InputKind::kEncodedImage: {
      TESSERA_ASSIGN_OR_RETURN(const auto elements, split_raw_bytes(raw, f));
      std::vector<std::vector<uint8_t>> decoded;
      for (size_t i = 0; i < elements.size(); ++i) {
        if (!base64) {
          decoded.emplace_back(elements[i].begin(), elements[i].end());
          continue;
        }
        auto bytes = base64_decode(elements[i]);
        if (!bytes) return Status::invalid_argument(element_field(f, i) + ": " + bytes.status().message());
        decoded.push_back(std::move(bytes).value());
      }
      return set_encoded_images(images, layout, std::move(decoded), f, limits);
    }
    case InputKind::kFloatTensor:
      if (raw.size() != layout.batch * layout.elements * 4) {
        return Status::invalid_argument(f + ": " + std::to_string(raw.size()) + " bytes; FP32 shape needs " +
                                        std::to_string(layout.batch * layout.elements * 4));
      }
      return set_float_tensor(images, layout, floats_from_raw(raw), f);
    case InputKind::kPixels:
      return set_pixels(images, layout, {reinterpret_cast<const uint8_t*>(raw.data()), raw.size()}, f);
  }
  return Status::internal("unreachable input kind");
}

Status set_timeout(InferRequest& request, int64_t microseconds, std::string_view field) {
  if (microseconds < 0) {
    return Status::invalid_argument(std::string(field) + ": " + std::to_string(microseconds) +
                                    "; the timeout is microseconds >= 0 (0: none)");
  }
  request.timeout_us = static_cast<uint64_t>(microseconds);
  return Status::ok();
}

Status check_priority(int64_t priority, std::string_view field) {
  if (priority >= 0) return Status::ok();
  return Status::invalid_argument(std::string(field) + ": " + std::to_string(priority) + "; the priority is >= 0");
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
