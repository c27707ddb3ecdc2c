// A KServe v2 inference request as tesserad understands it, whichever transport brought it
// (decode_grpc.h, decode_json.h), and the checks both decoders share.
//
// An image classifier takes exactly one input tensor, in one of three forms (its name is not
// checked: there is only one):
//   BYTES, shape [1] or [1,1]: one element holding a JPEG or PNG file. gRPC: in
//     contents.bytes_contents or raw_input_contents (4-byte little-endian length + bytes). JSON:
//     the element is a base64 string (standard or URL-safe alphabet, padding optional), whether
//     or not the input has the parameter "content_type": "base64" (any other content_type is
//     refused). gRPC takes base64 text too when the input has that parameter. Tensors ignore
//     content_type.
//   FP32, shape [1,C,H,W] or [C,H,W] equal to the model's input: the model's input as is (NCHW,
//     already preprocessed); finite values only.
//   UINT8, shape [1,H,W,C] or [H,W,C], C = 1 or 3: interleaved pixels 0..255, resized and
//     normalised like a decoded image. (gRPC: contents.uint_contents or raw, one byte each.)
// The output request may name the model's one output, with the parameter "classification": K
// (an integer >= 1) to get Triton's classification extension instead of the tensor.
#pragma once

#include <cstdint>
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

struct InferInput {
  InputKind kind = InputKind::kEncodedImage;
  std::string name;  // as the client sent it
  std::vector<uint8_t> encoded_image;
  std::vector<float> tensor;
  Image pixels;
};

struct RequestedOutput {
  std::string name;
  // > 0: answer the top `classification` classes as "score:index:label" strings (BYTES) instead
  // of the FP32 tensor. Already capped at the model's number of classes.
  int classification = 0;
};

struct InferRequest {
  std::string id;  // echoed in the response
  InferInput input;
  // Empty: the model's one output as FP32.
  std::vector<RequestedOutput> outputs;

  // The largest classification count asked for, 0 when none.
  int top_k() const;
};

// The data type names the protocol uses.
inline constexpr std::string_view kBytes = "BYTES";
inline constexpr std::string_view kFp32 = "FP32";
inline constexpr std::string_view kUint8 = "UINT8";

// How many elements an input of `datatype` and `shape` carries, with its pixel geometry for
// UINT8. Errors name the field: "inputs[0].datatype" / "inputs[0].shape".
struct InputLayout {
  InputKind kind = InputKind::kEncodedImage;
  size_t elements = 0;
  int height = 0;
  int width = 0;
  int channels = 0;
};
Result<InputLayout> input_layout(std::string_view datatype, std::span<const int64_t> shape, const ModelSignature& model,
                                 const DecodeLimits& limits);

// A BYTES element holding an image: not empty, at most limits.max_bytes, JPEG or PNG magic.
Status check_encoded_image(std::span<const uint8_t> bytes, std::string_view field, const DecodeLimits& limits);

// Fill input.tensor / input.pixels from flattened elements, checking their count against
// `layout` (and, for FP32, that every value is finite). Errors are prefixed with `field`.
Status set_float_tensor(InferInput& input, const InputLayout& layout, std::vector<float> values,
                        std::string_view field);
Status set_pixels(InferInput& input, const InputLayout& layout, std::vector<uint8_t> values, std::string_view field);

// K of a "classification" parameter, capped at the model's classes; K < 1 is an error.
Result<int> classification_count(int64_t k, std::string_view field, const ModelSignature& model);

// Requested outputs must name the model's output, each at most once.
Status check_requested_outputs(const std::vector<RequestedOutput>& outputs, const ModelSignature& model);

// An empty version or the model's version is fine; anything else is NOT_FOUND.
Status check_model_version(const ModelSignature& model, std::string_view version);

// "[1,3,224,224]"
std::string shape_string(std::span<const int64_t> shape);

}  // namespace tessera::kserve
