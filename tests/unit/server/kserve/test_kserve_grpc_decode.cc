// The KServe v2 codec (server/kserve/decode_grpc.h): ModelInferRequest decoding over gRPC —
// bytes, FP32 and UINT8 inputs in contents or raw, the classification parameter, every error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "server/kserve/decode_grpc.h"
#include "server/kserve/raw_contents.h"
#include "tests/unit/server/kserve/kserve_codec_test_support.h"

namespace tessera::kserve {
namespace {

using codec_test::add_classification;
using codec_test::as_vector;
using codec_test::b64;
using codec_test::decode;
using codec_test::expect_error;
using codec_test::grpc_png_request;
using codec_test::grpc_request;
using codec_test::png_bytes;
using codec_test::raw_element;
using inference::ModelInferRequest;

TEST(KserveGrpcDecode, BytesInContents) {
  auto r = decode(grpc_png_request());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->id, "req-1");
  EXPECT_EQ(r->images[0].name, "image");
  EXPECT_EQ(r->images[0].kind, InputKind::kEncodedImage);
  EXPECT_EQ(r->images[0].encoded_image, as_vector(png_bytes()));
  EXPECT_TRUE(r->outputs.empty());
  EXPECT_EQ(r->top_k(), 0);
}

TEST(KserveGrpcDecode, BytesInRawContentsWithShapeOneByOne) {
  ModelInferRequest req = grpc_request("BYTES", {1, 1});
  req.add_raw_input_contents(raw_element(png_bytes()));
  auto r = decode(req);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->images[0].encoded_image, as_vector(png_bytes()));
}

TEST(KserveGrpcDecode, Base64BytesWhenContentTypeSaysSo) {
  ModelInferRequest req = grpc_request("BYTES", {1});
  req.mutable_inputs(0)->mutable_contents()->add_bytes_contents(b64(png_bytes()));
  (*req.mutable_inputs(0)->mutable_parameters())["content_type"].set_string_param("base64");
  auto r = decode(req);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->images[0].encoded_image, as_vector(png_bytes()));

  (*req.mutable_inputs(0)->mutable_parameters())["content_type"].set_string_param("str");
  expect_error(decode(req), "inputs[0].parameters.content_type");
  (*req.mutable_inputs(0)->mutable_parameters())["content_type"].set_int64_param(1);
  expect_error(decode(req), "inputs[0].parameters.content_type");
}

TEST(KserveGrpcDecode, TensorsIgnoreContentType) {
  ModelInferRequest req = grpc_request("FP32", {1, 1, 4, 4});
  req.add_raw_input_contents(std::string(16 * 4, '\0'));
  (*req.mutable_inputs(0)->mutable_parameters())["content_type"].set_string_param("np");
  EXPECT_TRUE(decode(req).is_ok());
}

TEST(KserveGrpcDecode, BadBase64InGrpc) {
  ModelInferRequest req = grpc_request("BYTES", {1});
  req.mutable_inputs(0)->mutable_contents()->add_bytes_contents("***");
  (*req.mutable_inputs(0)->mutable_parameters())["content_type"].set_string_param("base64");
  expect_error(decode(req), "inputs[0].contents.bytes_contents[0]: not valid base64");
}

TEST(KserveGrpcDecode, EmptyBytesElement) {
  ModelInferRequest req = grpc_request("BYTES", {1});
  req.mutable_inputs(0)->mutable_contents()->add_bytes_contents("");
  expect_error(decode(req), "inputs[0].contents.bytes_contents[0]: the BYTES element is empty");

  ModelInferRequest raw = grpc_request("BYTES", {1});
  raw.add_raw_input_contents(raw_element(""));
  expect_error(decode(raw), "raw_input_contents[0][0]: the BYTES element is empty");
}

TEST(KserveGrpcDecode, BytesThatAreNotAnImage) {
  ModelInferRequest req = grpc_request("BYTES", {1});
  req.mutable_inputs(0)->mutable_contents()->add_bytes_contents("GIF89a....");
  expect_error(decode(req), "not a JPEG or PNG file");
}

TEST(KserveGrpcDecode, ImageOverTheSizeLimit) {
  DecodeLimits limits;
  limits.max_bytes = 10;
  expect_error(decode(grpc_png_request(), limits), "the limit is 10");
}

TEST(KserveGrpcDecode, BytesElementCount) {
  ModelInferRequest req = grpc_request("BYTES", {1});
  req.mutable_inputs(0)->mutable_contents()->add_bytes_contents(png_bytes());
  req.mutable_inputs(0)->mutable_contents()->add_bytes_contents(png_bytes());
  expect_error(decode(req), "inputs[0].contents.bytes_contents: 2 elements");

  ModelInferRequest none = grpc_request("BYTES", {1});
  expect_error(decode(none), "inputs[0].contents.bytes_contents: 0 elements");

  expect_error(decode(grpc_request("BYTES", {2})),
               "inputs[0].shape: [2] is a batch of 2 images; model 'fmnist' takes at most 1 (its max batch)");
  expect_error(decode(grpc_request("BYTES", {1, 2})), "inputs[0].shape: [1,2] for BYTES");
  expect_error(decode(grpc_request("BYTES", {0})), "inputs[0].shape: [0] is a batch of 0 images");
  expect_error(decode(grpc_request("BYTES", {1, 1, 1})), "inputs[0].shape");
}

TEST(KserveGrpcDecode, RawLengthPrefixWrong) {
  ModelInferRequest longer = grpc_request("BYTES", {1});
  std::string raw = raw_element(png_bytes());
  raw[0] = static_cast<char>(raw[0] + 5);  // declares 5 more bytes than follow
  longer.add_raw_input_contents(raw);
  expect_error(decode(longer), "raw_input_contents[0]: BYTES element 0 declares");

  ModelInferRequest cut = grpc_request("BYTES", {1});
  cut.add_raw_input_contents(std::string("\x02\x00", 2));
  expect_error(decode(cut), "2-byte length prefix");

  ModelInferRequest two = grpc_request("BYTES", {1});
  two.add_raw_input_contents(raw_element(png_bytes()) + raw_element(png_bytes()));
  expect_error(decode(two), "raw_input_contents[0]: 2 elements; the shape needs 1");

  // Raw bytes without any prefix: the first four bytes of the PNG read as a huge length.
  ModelInferRequest bare = grpc_request("BYTES", {1});
  bare.add_raw_input_contents(png_bytes());
  expect_error(decode(bare), "declares");
}

TEST(KserveGrpcDecode, ContentsAndRawTogether) {
  ModelInferRequest req = grpc_png_request();
  req.add_raw_input_contents(raw_element(png_bytes()));
  expect_error(decode(req), "inputs[0].contents: set together with raw_input_contents");
}

TEST(KserveGrpcDecode, RawEntryCountMustMatchInputs) {
  ModelInferRequest req = grpc_request("BYTES", {1});
  req.add_raw_input_contents(raw_element(png_bytes()));
  req.add_raw_input_contents(raw_element(png_bytes()));
  expect_error(decode(req), "raw_input_contents: 2 entries for 1 input");
}

TEST(KserveGrpcDecode, ExactlyOneInput) {
  ModelInferRequest two = grpc_png_request();
  *two.add_inputs() = two.inputs(0);
  expect_error(decode(two), "inputs: 2 tensors");

  ModelInferRequest none;
  expect_error(decode(none), "inputs: 0 tensors");
}

TEST(KserveGrpcDecode, WrongDatatype) {
  ModelInferRequest req = grpc_request("INT32", {1, 1, 4, 4});
  expect_error(decode(req), "inputs[0].datatype: 'INT32' is not accepted");
  expect_error(decode(grpc_request("fp32", {1, 1, 4, 4})), "inputs[0].datatype: 'fp32'");
  expect_error(decode(grpc_request("", {1})), "inputs[0].datatype");
}

TEST(KserveGrpcDecode, NegativeDimension) {
  expect_error(decode(grpc_request("FP32", {1, -1, 4, 4})), "inputs[0].shape: [1,-1,4,4] has a negative");
}

TEST(KserveGrpcDecode, Fp32InContentsWithAndWithoutBatchDimension) {
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{1, 1, 4, 4}, std::vector<int64_t>{1, 4, 4}}) {
    ModelInferRequest req = grpc_request("FP32", shape);
    for (int i = 0; i < 16; ++i) req.mutable_inputs(0)->mutable_contents()->add_fp32_contents(0.5f * i);
    auto r = decode(req);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ(r->images[0].kind, InputKind::kFloatTensor);
    ASSERT_EQ(r->images[0].tensor.size(), 16u);
    EXPECT_FLOAT_EQ(r->images[0].tensor[15], 7.5f);
  }
}

TEST(KserveGrpcDecode, Fp32InRawIsLittleEndian) {
  ModelInferRequest req = grpc_request("FP32", {1, 1, 4, 4});
  std::string raw;
  for (int i = 0; i < 16; ++i) {
    const float v = -1.25f * static_cast<float>(i);
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    for (int b = 0; b < 4; ++b) raw.push_back(static_cast<char>((bits >> (8 * b)) & 0xFF));
  }
  req.add_raw_input_contents(raw);
  auto r = decode(req);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_FLOAT_EQ(r->images[0].tensor[3], -3.75f);

  ModelInferRequest short_raw = grpc_request("FP32", {1, 1, 4, 4});
  short_raw.add_raw_input_contents(raw.substr(0, 60));
  expect_error(decode(short_raw), "raw_input_contents[0]: 60 bytes; FP32 shape needs 64");
}

TEST(KserveGrpcDecode, Fp32ShapeAndElementMismatch) {
  expect_error(decode(grpc_request("FP32", {1, 3, 4, 4})),
               "inputs[0].shape: [1,3,4,4] does not match model 'fmnist' input [1,1,4,4]");
  expect_error(decode(grpc_request("FP32", {2, 1, 4, 4})),
               "[2,1,4,4] is a batch of 2 images; model 'fmnist' takes at most 1");
  expect_error(decode(grpc_request("FP32", {16})), "does not match");

  ModelInferRequest few = grpc_request("FP32", {1, 1, 4, 4});
  few.mutable_inputs(0)->mutable_contents()->add_fp32_contents(1.0f);
  expect_error(decode(few), "inputs[0].contents.fp32_contents: 1 elements; the shape needs 16");

  // Data in the wrong typed field counts as none.
  ModelInferRequest wrong_field = grpc_request("FP32", {1, 1, 4, 4});
  for (int i = 0; i < 16; ++i) wrong_field.mutable_inputs(0)->mutable_contents()->add_fp64_contents(1.0);
  expect_error(decode(wrong_field), "fp32_contents: 0 elements");
}

TEST(KserveGrpcDecode, Fp32MustBeFinite) {
  ModelInferRequest req = grpc_request("FP32", {1, 1, 4, 4});
  for (int i = 0; i < 16; ++i) {
    req.mutable_inputs(0)->mutable_contents()->add_fp32_contents(i == 7 ? std::numeric_limits<float>::quiet_NaN()
                                                                        : 0.0f);
  }
  expect_error(decode(req), "inputs[0].contents.fp32_contents: element 7 is not a finite number");
}

TEST(KserveGrpcDecode, Uint8PixelsInContentsAndRaw) {
  ModelInferRequest req = grpc_request("UINT8", {1, 2, 3, 3});
  for (uint32_t i = 0; i < 18; ++i) req.mutable_inputs(0)->mutable_contents()->add_uint_contents(i * 10);
  auto r = decode(req);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->images[0].kind, InputKind::kPixels);
  EXPECT_EQ(r->images[0].pixels.height, 2);
  EXPECT_EQ(r->images[0].pixels.width, 3);
  EXPECT_EQ(r->images[0].pixels.channels, 3);
  ASSERT_EQ(r->images[0].pixels.pixels.size(), 18u);
  EXPECT_EQ(r->images[0].pixels.pixels[17], 170);

  ModelInferRequest raw = grpc_request("UINT8", {5, 7, 1});
  raw.add_raw_input_contents(std::string(35, '\x7f'));
  auto rr = decode(raw);
  ASSERT_TRUE(rr.is_ok()) << rr.status().to_string();
  EXPECT_EQ(rr->images[0].pixels.width, 7);
  EXPECT_EQ(rr->images[0].pixels.pixels[0], 0x7f);

  ModelInferRequest short_raw = grpc_request("UINT8", {5, 7, 1});
  short_raw.add_raw_input_contents(std::string(34, '\x7f'));
  expect_error(decode(short_raw), "raw_input_contents[0]: 34 elements; the shape needs 35");
}

TEST(KserveGrpcDecode, Uint8Errors) {
  ModelInferRequest big = grpc_request("UINT8", {1, 1, 1, 1});
  big.mutable_inputs(0)->mutable_contents()->add_uint_contents(256);
  expect_error(decode(big), "inputs[0].contents.uint_contents[0]: 256 is not a UINT8 value");

  expect_error(decode(grpc_request("UINT8", {1, 4, 4, 2})), "has C = 2");
  expect_error(decode(grpc_request("UINT8", {1, 4, 4})), "has C = 4");
  expect_error(decode(grpc_request("UINT8", {16})), "want [N,H,W,C]");
  expect_error(decode(grpc_request("UINT8", {1, 0, 4, 1})), "height or width outside");
  DecodeLimits limits;
  limits.max_side = 8;
  expect_error(decode(grpc_request("UINT8", {9, 4, 1}), limits), "outside 1..8");
  limits.max_pixels = 20;
  expect_error(decode(grpc_request("UINT8", {5, 5, 1}), limits), "more than 20 pixels");
}

TEST(KserveGrpcDecode, ClassificationParameter) {
  ModelInferRequest req = grpc_png_request();
  add_classification(req, 2);
  auto r = decode(req);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->outputs.size(), 1u);
  EXPECT_EQ(r->outputs[0].name, "probabilities");
  EXPECT_EQ(r->outputs[0].classification, 2);
  EXPECT_EQ(r->top_k(), 2);

  ModelInferRequest capped = grpc_png_request();
  add_classification(capped, 1000);
  EXPECT_EQ(decode(capped)->outputs[0].classification, 3);

  ModelInferRequest unsigned_k = grpc_png_request();
  add_classification(unsigned_k, 0);
  (*unsigned_k.mutable_outputs(0)->mutable_parameters())["classification"].set_uint64_param(1);
  EXPECT_EQ(decode(unsigned_k)->outputs[0].classification, 1);
}

TEST(KserveGrpcDecode, ClassificationErrors) {
  ModelInferRequest zero = grpc_png_request();
  add_classification(zero, 0);
  expect_error(decode(zero), "outputs[0].parameters.classification: 0; classification must be an integer >= 1");

  ModelInferRequest negative = grpc_png_request();
  add_classification(negative, -3);
  expect_error(decode(negative), "outputs[0].parameters.classification: -3");

  ModelInferRequest text = grpc_png_request();
  add_classification(text, 1);
  (*text.mutable_outputs(0)->mutable_parameters())["classification"].set_string_param("2");
  expect_error(decode(text), "outputs[0].parameters.classification: must be an integer");

  ModelInferRequest real = grpc_png_request();
  add_classification(real, 1);
  (*real.mutable_outputs(0)->mutable_parameters())["classification"].set_double_param(2.0);
  expect_error(decode(real), "outputs[0].parameters.classification: must be an integer");
}

TEST(KserveGrpcDecode, RequestedOutputNames) {
  ModelInferRequest unknown = grpc_png_request();
  unknown.add_outputs()->set_name("logits");
  expect_error(decode(unknown), "outputs[0].name: model 'fmnist' has no output 'logits'");

  ModelInferRequest twice = grpc_png_request();
  twice.add_outputs()->set_name("probabilities");
  twice.add_outputs()->set_name("probabilities");
  expect_error(decode(twice), "outputs[1].name: output 'probabilities' is requested twice");
}

TEST(KserveGrpcDecode, ModelVersion) {
  ModelInferRequest req = grpc_png_request();
  req.set_model_version("1");
  EXPECT_TRUE(decode(req).is_ok());
  req.set_model_version("2");
  expect_error(decode(req), "has no version '2'", StatusCode::kNotFound);
}

}  // namespace
}  // namespace tessera::kserve
