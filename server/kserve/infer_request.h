// A KServe v2 inference request as tesserad understands it, whichever transport brought it
// (decode_grpc.h, decode_json.h), and the checks both decoders share.
//
// An image classifier takes exactly one input tensor, a batch of N images (1 <= N <= the model's
// max batch, model.toml's [batching] max_batch; N over it is refused naming both numbers), in one
// of three forms (its name is not checked: there is only one):
//   BYTES, shape [N] or [N,1]: N elements, each a JPEG or PNG file. gRPC: in
//     contents.bytes_contents or raw_input_contents (4-byte little-endian length + bytes). JSON:
//     each element is a base64 string (standard or URL-safe alphabet, padding optional), whether
//     or not the input has the parameter "content_type": "base64" (any other content_type is
//     refused); HTTP binary data (decode_json.h): length-prefixed raw bytes. gRPC takes base64
//     text too when the input has that parameter. Tensors ignore content_type.
//   FP32, shape [N,C,H,W] or [C,H,W] (N = 1), C,H,W equal to the model's input: the model's input
//     as is (NCHW, already preprocessed); finite values only.
//   UINT8, shape [N,H,W,C] or [H,W,C] (N = 1), C = 1 or 3: interleaved pixels 0..255, resized and
//     normalised like a decoded image. (gRPC: contents.uint_contents or raw, one byte each.)
// The output request may name the model's one output, with the parameter "classification": K
// (an integer >= 1) to get Triton's classification extension instead of the tensor.
// Request parameters, as Triton reads them: "timeout" (microseconds, an integer >= 0; 0 is none)
// is the request's deadline after its arrival; "priority" (an integer >= 0) is checked and has no
// effect (one priority level); "binary_data_output" (HTTP, a bool) asks every output as binary
// data; any other parameter is ignored, as Triton passes unknown ones to the model.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "accel/common/status.h"
#include "accel/image/image.h"
#include "server/kserve/model_signature.h"

namespace tessera::kserve {

enum class InputKind {
  kEncodedImage,  // encoded_image holds a JPEG or PNG file
  kFloatTensor,   // tensor holds C*H*W floats (NCHW), the model's input as is
  kPixels,        // pixels holds the image, to preprocess like a decoded one
};

// One image of the request's input tensor.
struct InferInput {
  InputKind kind = InputKind::kEncodedImage;
  std::string name;  // the tensor's, as the client sent it
  std::vector<uint8_t> encoded_image;
  std::vector<float> tensor;
  Image pixels;
};

struct RequestedOutput {
  std::string name;
  // > 0: answer the top `classification` classes as "score:index:label" strings (BYTES) instead
  // of the FP32 tensor. Already capped at the model's number of classes.
  int classification = 0;
  // HTTP's binary tensor data extension: the output's "binary_data" parameter; unset: the
  // request's binary_data_output decides.
  std::optional<bool> binary;
  // Written into a system shared-memory region (shared_memory_params.h): the response carries
  // the output's name, datatype and shape without data.
  bool shared_memory = false;
};

struct InferRequest {
  std::string id;  // echoed in the response
  // The input tensor's images, in request order (at least one).
  std::vector<InferInput> images;
  // Empty: the model's one output as FP32.
  std::vector<RequestedOutput> outputs;
  bool binary_data_output = false;  // HTTP: outputs come back as binary data unless they say not
  uint64_t timeout_us = 0;          // the "timeout" parameter; 0: none

  // Whether `output` comes back as binary data (HTTP).
  bool binary(const RequestedOutput& output) const { return output.binary.value_or(binary_data_output); }

  // The largest classification count asked for, 0 when none.
  int top_k() const;
};

// The data type names the protocol uses.
inline constexpr std::string_view kBytes = "BYTES";
inline constexpr std::string_view kFp32 = "FP32";
inline constexpr std::string_view kUint8 = "UINT8";

// How many images an input of `datatype` and `shape` carries and how many elements each, with
// the pixel geometry for UINT8. Errors name the field: "inputs[0].datatype" / "inputs[0].shape".
struct InputLayout {
  InputKind kind = InputKind::kEncodedImage;
  size_t batch = 1;
  size_t elements = 0;  // per image
  int height = 0;
  int width = 0;
  int channels = 0;
};
Result<InputLayout> input_layout(std::string_view datatype, std::span<const int64_t> shape, const ModelSignature& model,
                                 const DecodeLimits& limits);

// A BYTES element holding an image: not empty, at most limits.max_bytes, JPEG or PNG magic.
Status check_encoded_image(std::span<const uint8_t> bytes, std::string_view field, const DecodeLimits& limits);

// Fill `images` (one per image of the batch, named `name`) from the flattened elements of the
// whole tensor, checking their count against `layout` (and, for FP32, that every value is
// finite; for BYTES, check_encoded_image). Errors are prefixed with `field`.
Status set_float_tensor(std::vector<InferInput>& images, const InputLayout& layout, std::span<const float> values,
                        std::string_view field);
Status set_pixels(std::vector<InferInput>& images, const InputLayout& layout, std::span<const uint8_t> values,
                  std::string_view field);
Status set_encoded_images(std::vector<InferInput>& images, const InputLayout& layout,
                          std::vector<std::vector<uint8_t>> elements, std::string_view field,
                          const DecodeLimits& limits);

// The raw layout (raw_contents.h) of a whole tensor -> `images`: gRPC's raw_input_contents and
// HTTP's binary data. `base64`: each BYTES element is base64 text (gRPC's content_type).
Status set_from_raw(std::vector<InferInput>& images, const InputLayout& layout, std::string_view raw, bool base64,
                    std::string_view field, const DecodeLimits& limits);

// The "timeout" and "priority" request parameters' values, already read as integers.
Status set_timeout(InferRequest& request, int64_t microseconds, std::string_view field);
Status check_priority(int64_t priority, std::string_view field);

// K of a "classification" parameter, capped at the model's classes; K < 1 is an error.
Result<int> classification_count(int64_t k, std::string_view field, const ModelSignature& model);

// Requested outputs must name the model's output, each at most once.
Status check_requested_outputs(const std::vector<RequestedOutput>& outputs, const ModelSignature& model);

// An empty version or the model's version is fine; anything else is NOT_FOUND.
Status check_model_version(const ModelSignature& model, std::string_view version);

// "[1,3,224,224]"
std::string shape_string(std::span<const int64_t> shape);

}  // namespace tessera::kserve
