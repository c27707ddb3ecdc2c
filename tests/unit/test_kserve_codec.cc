// The KServe v2 codec (server/kserve/): request decoding from gRPC and JSON, every error path,
// response and metadata encoding, and the proto's field numbers against the upstream ones.
#include <google/protobuf/descriptor.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kserve/grpc_predict_v2.pb.h"
#include "server/kserve/base64.h"
#include "server/kserve/decode_grpc.h"
#include "server/kserve/decode_json.h"
#include "server/kserve/error_json.h"
#include "server/kserve/infer_response.h"
#include "server/kserve/metadata.h"
#include "server/kserve/raw_contents.h"

namespace tessera::kserve {
namespace {

using inference::ModelInferRequest;
using nlohmann::json;

// A 1 x 4 x 4 input, three classes, the last one unlabelled.
ModelSignature test_model() {
  ModelSignature m;
  m.name = "fmnist";
  m.platform = "tessera_int8";
  m.channels = 1;
  m.height = 4;
  m.width = 4;
  m.num_classes = 3;
  m.labels = {"cat", "dog", ""};
  return m;
}

// Enough of a PNG for the magic-byte check.
std::string png_bytes() { return std::string("\x89PNG\r\n\x1a\n", 8) + "IHDR-and-the-rest"; }
std::vector<uint8_t> as_vector(const std::string& s) { return {s.begin(), s.end()}; }
std::string b64(const std::string& s) { return base64_encode(as_vector(s)); }

std::string raw_element(const std::string& s) {
  std::string raw;
  append_raw_bytes(raw, s);
  return raw;
}

ModelInferRequest grpc_request(const std::string& datatype, std::vector<int64_t> shape) {
  ModelInferRequest r;
  r.set_model_name("fmnist");
  r.set_id("req-1");
  auto* in = r.add_inputs();
  in->set_name("image");
  in->set_datatype(datatype);
  for (int64_t d : shape) in->add_shape(d);
  return r;
}

ModelInferRequest grpc_png_request() {
  ModelInferRequest r = grpc_request("BYTES", {1});
  r.mutable_inputs(0)->mutable_contents()->add_bytes_contents(png_bytes());
  return r;
}

void add_classification(ModelInferRequest& r, int64_t k) {
  auto* out = r.add_outputs();
  out->set_name("probabilities");
  (*out->mutable_parameters())["classification"].set_int64_param(k);
}

// The error of a decode that must fail: INVALID_ARGUMENT (unless `code` says otherwise) whose
// message contains `needle`.
template <class R>
void expect_error(const R& result, const std::string& needle, StatusCode code = StatusCode::kInvalidArgument) {
  ASSERT_FALSE(result.is_ok()) << "expected an error containing: " << needle;
  EXPECT_EQ(result.status().code(), code) << result.status().to_string();
  EXPECT_NE(result.status().message().find(needle), std::string::npos)
      << "message: " << result.status().message() << "\nwanted: " << needle;
}

Result<InferRequest> decode(const ModelInferRequest& r, const DecodeLimits& limits = {}) {
  return decode_infer_request(r, test_model(), limits);
}
Result<InferRequest> decode(const json& body, const DecodeLimits& limits = {}) {
  return decode_infer_request_json(body, test_model(), limits);
}

json json_png_request() {
  return {{"id", "j-1"},
          {"inputs", {{{"name", "image"}, {"shape", {1}}, {"datatype", "BYTES"}, {"data", {b64(png_bytes())}}}}}};
}

json json_fp32_request(json data, json shape = {1, 1, 4, 4}) {
  return {{"inputs", {{{"name", "input"}, {"shape", shape}, {"datatype", "FP32"}, {"data", data}}}}};
}

// ---------------------------------------------------------------------------------------------
// gRPC decoding

TEST(KserveGrpcDecode, BytesInContents) {
  auto r = decode(grpc_png_request());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->id, "req-1");
  EXPECT_EQ(r->input.name, "image");
  EXPECT_EQ(r->input.kind, InputKind::kEncodedImage);
  EXPECT_EQ(r->input.encoded_image, as_vector(png_bytes()));
  EXPECT_TRUE(r->outputs.empty());
  EXPECT_EQ(r->top_k(), 0);
}

TEST(KserveGrpcDecode, BytesInRawContentsWithShapeOneByOne) {
  ModelInferRequest req = grpc_request("BYTES", {1, 1});
  req.add_raw_input_contents(raw_element(png_bytes()));
  auto r = decode(req);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->input.encoded_image, as_vector(png_bytes()));
}

TEST(KserveGrpcDecode, Base64BytesWhenContentTypeSaysSo) {
  ModelInferRequest req = grpc_request("BYTES", {1});
  req.mutable_inputs(0)->mutable_contents()->add_bytes_contents(b64(png_bytes()));
  (*req.mutable_inputs(0)->mutable_parameters())["content_type"].set_string_param("base64");
  auto r = decode(req);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->input.encoded_image, as_vector(png_bytes()));

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
  expect_error(decode(raw), "raw_input_contents[0]: the BYTES element is empty");
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

  expect_error(decode(grpc_request("BYTES", {2})), "inputs[0].shape: [2] for BYTES");
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
  expect_error(decode(two), "raw_input_contents[0]: 2 BYTES elements");

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
  for (std::vector<int64_t> shape : {std::vector<int64_t>{1, 1, 4, 4}, std::vector<int64_t>{1, 4, 4}}) {
    ModelInferRequest req = grpc_request("FP32", shape);
    for (int i = 0; i < 16; ++i) req.mutable_inputs(0)->mutable_contents()->add_fp32_contents(0.5f * i);
    auto r = decode(req);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ(r->input.kind, InputKind::kFloatTensor);
    ASSERT_EQ(r->input.tensor.size(), 16u);
    EXPECT_FLOAT_EQ(r->input.tensor[15], 7.5f);
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
  EXPECT_FLOAT_EQ(r->input.tensor[3], -3.75f);

  ModelInferRequest short_raw = grpc_request("FP32", {1, 1, 4, 4});
  short_raw.add_raw_input_contents(raw.substr(0, 60));
  expect_error(decode(short_raw), "raw_input_contents[0]: 60 bytes; FP32 shape needs 64");
}

TEST(KserveGrpcDecode, Fp32ShapeAndElementMismatch) {
  expect_error(decode(grpc_request("FP32", {1, 3, 4, 4})),
               "inputs[0].shape: [1,3,4,4] does not match model 'fmnist' input [1,1,4,4]");
  expect_error(decode(grpc_request("FP32", {2, 1, 4, 4})), "does not match");
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
  EXPECT_EQ(r->input.kind, InputKind::kPixels);
  EXPECT_EQ(r->input.pixels.height, 2);
  EXPECT_EQ(r->input.pixels.width, 3);
  EXPECT_EQ(r->input.pixels.channels, 3);
  ASSERT_EQ(r->input.pixels.pixels.size(), 18u);
  EXPECT_EQ(r->input.pixels.pixels[17], 170);

  ModelInferRequest raw = grpc_request("UINT8", {5, 7, 1});
  raw.add_raw_input_contents(std::string(35, '\x7f'));
  auto rr = decode(raw);
  ASSERT_TRUE(rr.is_ok()) << rr.status().to_string();
  EXPECT_EQ(rr->input.pixels.width, 7);
  EXPECT_EQ(rr->input.pixels.pixels[0], 0x7f);

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
  expect_error(decode(grpc_request("UINT8", {16})), "want [1,H,W,C]");
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

// ---------------------------------------------------------------------------------------------
// JSON decoding

TEST(KserveJsonDecode, Base64Image) {
  auto r = decode(json_png_request());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->id, "j-1");
  EXPECT_EQ(r->input.name, "image");
  EXPECT_EQ(r->input.kind, InputKind::kEncodedImage);
  EXPECT_EQ(r->input.encoded_image, as_vector(png_bytes()));

  json nested = json_png_request();
  nested["inputs"][0]["shape"] = {1, 1};
  nested["inputs"][0]["data"] = json::array({json::array({b64(png_bytes())})});
  nested["inputs"][0]["parameters"] = {{"content_type", "base64"}};
  auto n = decode(nested);
  ASSERT_TRUE(n.is_ok()) << n.status().to_string();
  EXPECT_EQ(n->input.encoded_image, as_vector(png_bytes()));
}

TEST(KserveJsonDecode, FromBodyText) {
  auto r = decode_infer_request_body(json_png_request().dump(), test_model());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->input.encoded_image, as_vector(png_bytes()));

  expect_error(decode_infer_request_body("{\"inputs\": [}", test_model()), "request body: not valid JSON");
  expect_error(decode_infer_request_body("[1,2]", test_model()), "request body: must be a JSON object");
}

TEST(KserveJsonDecode, BytesErrors) {
  json bad = json_png_request();
  bad["inputs"][0]["data"] = {"iVBO!!"};
  expect_error(decode(bad), "inputs[0].data[0]: not valid base64: unexpected character at offset 4");

  json empty = json_png_request();
  empty["inputs"][0]["data"] = {""};
  expect_error(decode(empty), "inputs[0].data[0]: the BYTES element is empty");

  json number = json_png_request();
  number["inputs"][0]["data"] = {42};
  expect_error(decode(number), "inputs[0].data[0]: must be a base64 string");

  json two = json_png_request();
  two["inputs"][0]["data"] = {b64(png_bytes()), b64(png_bytes())};
  expect_error(decode(two), "inputs[0].data: 2 elements; the shape needs 1");

  json other_type = json_png_request();
  other_type["inputs"][0]["parameters"] = {{"content_type", "str"}};
  expect_error(decode(other_type), "inputs[0].parameters.content_type: must be \"base64\"");

  json binary = json_png_request();
  binary["inputs"][0]["parameters"] = {{"binary_data_size", 123}};
  expect_error(decode(binary),
               "inputs[0].parameters.binary_data_size: the binary tensor data extension is not supported");

  json not_image = json_png_request();
  not_image["inputs"][0]["data"] = {b64("hello world")};
  expect_error(decode(not_image), "inputs[0].data[0]: the BYTES element is not a JPEG or PNG file");
}

TEST(KserveJsonDecode, Fp32FlatAndNested) {
  json flat = json::array();
  for (int i = 0; i < 16; ++i) flat.push_back(i * 0.25);
  auto r = decode(json_fp32_request(flat));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->input.kind, InputKind::kFloatTensor);
  EXPECT_FLOAT_EQ(r->input.tensor[5], 1.25f);

  json nested = json::array();  // [1][1][4][4]
  json rows = json::array();
  for (int y = 0; y < 4; ++y) rows.push_back({y * 4, y * 4 + 1, y * 4 + 2, y * 4 + 3});
  nested.push_back(json::array({rows}));
  auto n = decode(json_fp32_request(nested));
  ASSERT_TRUE(n.is_ok()) << n.status().to_string();
  EXPECT_FLOAT_EQ(n->input.tensor[13], 13.0f);

  json deeper = json::array({nested});
  expect_error(decode(json_fp32_request(deeper)), "inputs[0].data: nested deeper than the shape");
}

TEST(KserveJsonDecode, TensorsIgnoreContentType) {
  json body = json_fp32_request(std::vector<float>(16, 0.5f));
  body["inputs"][0]["parameters"] = {{"content_type", "np"}};
  EXPECT_TRUE(decode(body).is_ok());
}

TEST(KserveJsonDecode, Fp32Errors) {
  json flat = json::array();
  for (int i = 0; i < 16; ++i) flat.push_back(1.0);
  json str = flat;
  str[3] = "1.0";
  expect_error(decode(json_fp32_request(str)), "inputs[0].data[3]: must be a number");
  json boolean = flat;
  boolean[0] = true;
  expect_error(decode(json_fp32_request(boolean)), "inputs[0].data[0]: must be a number");
  json huge = flat;
  huge[9] = 1e300;  // not a float
  expect_error(decode(json_fp32_request(huge)), "inputs[0].data: element 9 is not a finite number");
  json few = flat;
  few.erase(few.size() - 1);
  expect_error(decode(json_fp32_request(few)), "inputs[0].data: 15 elements; the shape needs 16");
  expect_error(decode(json_fp32_request(flat, {1, 1, 2, 8})), "inputs[0].shape: [1,1,2,8] does not match");
  expect_error(decode(json_fp32_request(1.0)), "inputs[0].data: must be an array");
}

TEST(KserveJsonDecode, Uint8Pixels) {
  json body = {
      {"inputs", {{{"name", "px"}, {"shape", {2, 2, 1}}, {"datatype", "UINT8"}, {"data", {0, 64, 128, 255}}}}}};
  auto r = decode(body);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->input.kind, InputKind::kPixels);
  EXPECT_EQ(r->input.pixels.pixels, (std::vector<uint8_t>{0, 64, 128, 255}));

  body["inputs"][0]["data"] = {0, 64, 128, 256};
  expect_error(decode(body), "inputs[0].data[3]: must be an integer 0..255");
  body["inputs"][0]["data"] = {0, -1, 128, 255};
  expect_error(decode(body), "inputs[0].data[1]: must be an integer 0..255");
  body["inputs"][0]["data"] = {0, 1.5, 128, 255};
  expect_error(decode(body), "inputs[0].data[1]: must be an integer 0..255");
}

TEST(KserveJsonDecode, StructureErrors) {
  expect_error(decode(json{{"inputs", json::array()}}), "inputs: 0 tensors");
  expect_error(decode(json{{"outputs", json::array()}}), "inputs: missing or not an array");

  json two = json_png_request();
  two["inputs"].push_back(two["inputs"][0]);
  expect_error(decode(two), "inputs: 2 tensors; model 'fmnist' takes exactly one");

  json id = json_png_request();
  id["id"] = 7;
  expect_error(decode(id), "id: must be a string");

  json params = json_png_request();
  params["parameters"] = json::array();
  expect_error(decode(params), "parameters: must be an object");

  for (const char* key : {"name", "datatype", "shape", "data"}) {
    json missing = json_png_request();
    missing["inputs"][0].erase(key);
    expect_error(decode(missing), std::string("inputs[0].") + key);
  }
  json shape = json_png_request();
  shape["inputs"][0]["shape"] = {"1"};
  expect_error(decode(shape), "inputs[0].shape: must be an array of integers");
  shape["inputs"][0]["shape"] = {-1};
  expect_error(decode(shape), "inputs[0].shape: [-1] has a negative dimension");

  json datatype = json_png_request();
  datatype["inputs"][0]["datatype"] = "FP64";
  expect_error(decode(datatype), "inputs[0].datatype: 'FP64' is not accepted");

  json input_params = json_png_request();
  input_params["inputs"][0]["parameters"] = "x";
  expect_error(decode(input_params), "inputs[0].parameters: must be an object");
}

TEST(KserveJsonDecode, Outputs) {
  json body = json_png_request();
  body["outputs"] = {{{"name", "probabilities"}, {"parameters", {{"classification", 2}, {"binary_data", true}}}}};
  auto r = decode(body);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->outputs.size(), 1u);
  EXPECT_EQ(r->outputs[0].classification, 2);

  body["outputs"][0]["parameters"]["classification"] = "2";
  expect_error(decode(body), "outputs[0].parameters.classification: must be an integer");
  body["outputs"][0]["parameters"]["classification"] = 2.5;
  expect_error(decode(body), "outputs[0].parameters.classification: must be an integer");
  body["outputs"][0]["parameters"]["classification"] = true;
  expect_error(decode(body), "outputs[0].parameters.classification: must be an integer");
  body["outputs"][0]["parameters"]["classification"] = 0;
  expect_error(decode(body), "outputs[0].parameters.classification: 0");
  body["outputs"][0]["parameters"]["classification"] = 99;
  EXPECT_EQ(decode(body)->outputs[0].classification, 3);

  json unknown = json_png_request();
  unknown["outputs"] = {{{"name", "OUTPUT0"}}};
  expect_error(decode(unknown), "outputs[0].name: model 'fmnist' has no output 'OUTPUT0'");
  unknown["outputs"] = {{{"nom", "x"}}};
  expect_error(decode(unknown), "outputs[0].name: missing");
  unknown["outputs"] = "probabilities";
  expect_error(decode(unknown), "outputs: must be an array");
  unknown["outputs"] = {{{"name", "probabilities"}, {"parameters", 1}}};
  expect_error(decode(unknown), "outputs[0].parameters: must be an object");
}

// ---------------------------------------------------------------------------------------------
// Responses

const std::vector<float> kProbabilities = {0.2f, 0.7f, 0.1f};

TEST(KserveResponse, ClassificationStringsFollowTriton) {
  const std::vector<std::string> labels = {"cat", "dog", ""};
  EXPECT_EQ(classification_strings(kProbabilities, 3, labels),
            (std::vector<std::string>{"0.700000:1:dog", "0.200000:0:cat", "0.100000:2"}));
  // Ties: lower index first; no labels at all: "<score>:<index>".
  EXPECT_EQ(classification_strings(std::vector<float>{0.5f, 0.5f}, 2, {}),
            (std::vector<std::string>{"0.500000:0", "0.500000:1"}));
  EXPECT_TRUE(classification_strings(kProbabilities, 0, labels).empty());
}

TEST(KserveResponse, GrpcProbabilitiesInRawLittleEndian) {
  InferRequest request;
  request.id = "abc";
  const auto response = make_infer_response(request, test_model(), kProbabilities);
  EXPECT_EQ(response.model_name(), "fmnist");
  EXPECT_EQ(response.model_version(), "1");
  EXPECT_EQ(response.id(), "abc");
  ASSERT_EQ(response.outputs_size(), 1);
  const auto& out = response.outputs(0);
  EXPECT_EQ(out.name(), "probabilities");
  EXPECT_EQ(out.datatype(), "FP32");
  EXPECT_EQ(std::vector<int64_t>(out.shape().begin(), out.shape().end()), (std::vector<int64_t>{1, 3}));
  EXPECT_FALSE(out.has_contents());
  ASSERT_EQ(response.raw_output_contents_size(), 1);
  const std::string& raw = response.raw_output_contents(0);
  ASSERT_EQ(raw.size(), 12u);
  uint32_t bits = 0;
  for (int b = 3; b >= 0; --b) bits = (bits << 8) | static_cast<uint8_t>(raw[4 + static_cast<size_t>(b)]);
  float v;
  std::memcpy(&v, &bits, 4);
  EXPECT_EQ(v, 0.7f);
  EXPECT_EQ(floats_from_raw(raw), kProbabilities);
}

TEST(KserveResponse, GrpcClassificationOutput) {
  ModelInferRequest req = grpc_png_request();
  add_classification(req, 2);
  auto request = decode(req);
  ASSERT_TRUE(request.is_ok());
  const auto response = make_infer_response(*request, test_model(), kProbabilities);
  EXPECT_EQ(response.id(), "req-1");
  ASSERT_EQ(response.outputs_size(), 1);
  EXPECT_EQ(response.outputs(0).name(), "probabilities");
  EXPECT_EQ(response.outputs(0).datatype(), "BYTES");
  EXPECT_EQ(std::vector<int64_t>(response.outputs(0).shape().begin(), response.outputs(0).shape().end()),
            (std::vector<int64_t>{1, 2}));
  auto elements = split_raw_bytes(response.raw_output_contents(0), "out");
  ASSERT_TRUE(elements.is_ok());
  EXPECT_EQ(*elements, (std::vector<std::string_view>{"0.700000:1:dog", "0.200000:0:cat"}));
}

TEST(KserveResponse, JsonRoundTrip) {
  auto request = decode(json_png_request());
  ASSERT_TRUE(request.is_ok());
  const json body = infer_response_json(*request, test_model(), kProbabilities);
  EXPECT_EQ(body["model_name"], "fmnist");
  EXPECT_EQ(body["model_version"], "1");
  EXPECT_EQ(body["id"], "j-1");
  ASSERT_EQ(body["outputs"].size(), 1u);
  const json& out = body["outputs"][0];
  EXPECT_EQ(out["name"], "probabilities");
  EXPECT_EQ(out["datatype"], "FP32");
  EXPECT_EQ(out["shape"], json({1, 3}));
  // Floats print with the fewest digits that read back as the same float.
  EXPECT_EQ(out["data"].dump(), "[0.2,0.7,0.1]");
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(out["data"][i].get<float>(), kProbabilities[i]);

  json with_k = json_png_request();
  with_k.erase("id");
  with_k["outputs"] = {{{"name", "probabilities"}, {"parameters", {{"classification", 1}}}}};
  auto k_request = decode(with_k);
  ASSERT_TRUE(k_request.is_ok());
  const json k_body = infer_response_json(*k_request, test_model(), kProbabilities);
  EXPECT_FALSE(k_body.contains("id"));
  EXPECT_EQ(k_body["outputs"][0]["datatype"], "BYTES");
  EXPECT_EQ(k_body["outputs"][0]["shape"], json({1, 1}));
  EXPECT_EQ(k_body["outputs"][0]["data"], json({"0.700000:1:dog"}));
}

// ---------------------------------------------------------------------------------------------
// Metadata and errors

TEST(KserveMetadata, Server) {
  const auto proto = make_server_metadata("0.1.0");
  EXPECT_EQ(proto.name(), "tesserad");
  EXPECT_EQ(proto.version(), "0.1.0");
  ASSERT_EQ(proto.extensions_size(), 1);
  EXPECT_EQ(proto.extensions(0), "classification");
  EXPECT_EQ(server_metadata_json("0.1.0"),
            json({{"name", "tesserad"}, {"version", "0.1.0"}, {"extensions", {"classification"}}}));
}

TEST(KserveMetadata, Model) {
  const auto proto = make_model_metadata(test_model());
  EXPECT_EQ(proto.name(), "fmnist");
  ASSERT_EQ(proto.versions_size(), 1);
  EXPECT_EQ(proto.versions(0), "1");
  EXPECT_EQ(proto.platform(), "tessera_int8");
  ASSERT_EQ(proto.inputs_size(), 1);
  EXPECT_EQ(proto.inputs(0).name(), "input");
  EXPECT_EQ(proto.inputs(0).datatype(), "FP32");
  EXPECT_EQ(std::vector<int64_t>(proto.inputs(0).shape().begin(), proto.inputs(0).shape().end()),
            (std::vector<int64_t>{1, 1, 4, 4}));
  ASSERT_EQ(proto.outputs_size(), 1);
  EXPECT_EQ(proto.outputs(0).name(), "probabilities");
  EXPECT_EQ(std::vector<int64_t>(proto.outputs(0).shape().begin(), proto.outputs(0).shape().end()),
            (std::vector<int64_t>{1, 3}));

  const json j = model_metadata_json(test_model());
  EXPECT_EQ(j, json({{"name", "fmnist"},
                     {"versions", {"1"}},
                     {"platform", "tessera_int8"},
                     {"inputs", {{{"name", "input"}, {"datatype", "FP32"}, {"shape", {1, 1, 4, 4}}}}},
                     {"outputs", {{{"name", "probabilities"}, {"datatype", "FP32"}, {"shape", {1, 3}}}}}}));
}

TEST(KserveMetadata, AdvertisedInputDecodes) {
  // What ModelMetadata advertises is what a generic client (perf_analyzer) will send.
  const auto meta = make_model_metadata(test_model());
  ModelInferRequest req =
      grpc_request(meta.inputs(0).datatype(), {meta.inputs(0).shape().begin(), meta.inputs(0).shape().end()});
  req.add_raw_input_contents(std::string(16 * 4, '\0'));
  EXPECT_TRUE(decode(req).is_ok());
}

TEST(KserveErrors, ErrorJson) {
  EXPECT_EQ(error_json("bad thing"), json({{"error", "bad thing"}}));
  EXPECT_EQ(error_json(Status::invalid_argument("inputs: 2 tensors")).dump(), R"({"error":"inputs: 2 tensors"})");
}

// ---------------------------------------------------------------------------------------------
// Base64

TEST(KserveBase64, RoundTripsEveryLength) {
  std::mt19937 rng(7);
  for (size_t n = 0; n < 40; ++n) {
    std::vector<uint8_t> bytes(n);
    for (auto& b : bytes) b = static_cast<uint8_t>(rng());
    const std::string text = base64_encode(bytes);
    EXPECT_EQ(text.size() % 4, 0u);
    auto back = base64_decode(text);
    ASSERT_TRUE(back.is_ok()) << back.status().to_string();
    EXPECT_EQ(*back, bytes);
  }
  EXPECT_EQ(base64_encode(as_vector("Man")), "TWFu");
  EXPECT_EQ(base64_encode(as_vector("Ma")), "TWE=");
}

TEST(KserveBase64, AcceptsUrlSafeUnpaddedAndWhitespace) {
  EXPECT_EQ(*base64_decode("TWE"), as_vector("Ma"));
  EXPECT_EQ(*base64_decode("TW\nFu\r\n"), as_vector("Man"));
  EXPECT_EQ(*base64_decode("-_8="), (std::vector<uint8_t>{0xFB, 0xFF}));
  EXPECT_EQ(*base64_decode("+/8="), (std::vector<uint8_t>{0xFB, 0xFF}));
}

TEST(KserveBase64, RejectsMalformed) {
  expect_error(base64_decode("TW!u"), "unexpected character at offset 2");
  expect_error(base64_decode("TWFuT"), "truncated");
  expect_error(base64_decode("TWE=x"), "data after '=' padding");
  expect_error(base64_decode("TWE=="), "wrong '=' padding");
  expect_error(base64_decode("TWFu="), "wrong '=' padding");
}

// ---------------------------------------------------------------------------------------------
// The proto against upstream. Written down from KServe's grpc_predict_v2.proto
// (kserve/kserve docs/predict-api/v2/ and python/kserve/kserve/protocol/grpc/) and, for
// InferParameter's fields 4 and 5, Triton's grpc_service.proto (triton-inference-server/common
// protobuf/). Checked against the descriptor protoc compiled into this binary, so a renumbered
// or retyped field fails here.

struct UpstreamField {
  const char* message;
  const char* field;
  int number;
  google::protobuf::FieldDescriptor::Type type;
  bool repeated;
};

using FD = google::protobuf::FieldDescriptor;
const UpstreamField kUpstreamFields[] = {
    {"ServerLiveResponse", "live", 1, FD::TYPE_BOOL, false},
    {"ServerReadyResponse", "ready", 1, FD::TYPE_BOOL, false},
    {"ModelReadyRequest", "name", 1, FD::TYPE_STRING, false},
    {"ModelReadyRequest", "version", 2, FD::TYPE_STRING, false},
    {"ModelReadyResponse", "ready", 1, FD::TYPE_BOOL, false},
    {"ServerMetadataResponse", "name", 1, FD::TYPE_STRING, false},
    {"ServerMetadataResponse", "version", 2, FD::TYPE_STRING, false},
    {"ServerMetadataResponse", "extensions", 3, FD::TYPE_STRING, true},
    {"ModelMetadataRequest", "name", 1, FD::TYPE_STRING, false},
    {"ModelMetadataRequest", "version", 2, FD::TYPE_STRING, false},
    {"ModelMetadataResponse", "name", 1, FD::TYPE_STRING, false},
    {"ModelMetadataResponse", "versions", 2, FD::TYPE_STRING, true},
    {"ModelMetadataResponse", "platform", 3, FD::TYPE_STRING, false},
    {"ModelMetadataResponse", "inputs", 4, FD::TYPE_MESSAGE, true},
    {"ModelMetadataResponse", "outputs", 5, FD::TYPE_MESSAGE, true},
    {"ModelMetadataResponse.TensorMetadata", "name", 1, FD::TYPE_STRING, false},
    {"ModelMetadataResponse.TensorMetadata", "datatype", 2, FD::TYPE_STRING, false},
    {"ModelMetadataResponse.TensorMetadata", "shape", 3, FD::TYPE_INT64, true},
    {"ModelInferRequest", "model_name", 1, FD::TYPE_STRING, false},
    {"ModelInferRequest", "model_version", 2, FD::TYPE_STRING, false},
    {"ModelInferRequest", "id", 3, FD::TYPE_STRING, false},
    {"ModelInferRequest", "parameters", 4, FD::TYPE_MESSAGE, true},
    {"ModelInferRequest", "inputs", 5, FD::TYPE_MESSAGE, true},
    {"ModelInferRequest", "outputs", 6, FD::TYPE_MESSAGE, true},
    {"ModelInferRequest", "raw_input_contents", 7, FD::TYPE_BYTES, true},
    {"ModelInferRequest.InferInputTensor", "name", 1, FD::TYPE_STRING, false},
    {"ModelInferRequest.InferInputTensor", "datatype", 2, FD::TYPE_STRING, false},
    {"ModelInferRequest.InferInputTensor", "shape", 3, FD::TYPE_INT64, true},
    {"ModelInferRequest.InferInputTensor", "parameters", 4, FD::TYPE_MESSAGE, true},
    {"ModelInferRequest.InferInputTensor", "contents", 5, FD::TYPE_MESSAGE, false},
    {"ModelInferRequest.InferRequestedOutputTensor", "name", 1, FD::TYPE_STRING, false},
    {"ModelInferRequest.InferRequestedOutputTensor", "parameters", 2, FD::TYPE_MESSAGE, true},
    {"ModelInferResponse", "model_name", 1, FD::TYPE_STRING, false},
    {"ModelInferResponse", "model_version", 2, FD::TYPE_STRING, false},
    {"ModelInferResponse", "id", 3, FD::TYPE_STRING, false},
    {"ModelInferResponse", "parameters", 4, FD::TYPE_MESSAGE, true},
    {"ModelInferResponse", "outputs", 5, FD::TYPE_MESSAGE, true},
    {"ModelInferResponse", "raw_output_contents", 6, FD::TYPE_BYTES, true},
    {"ModelInferResponse.InferOutputTensor", "name", 1, FD::TYPE_STRING, false},
    {"ModelInferResponse.InferOutputTensor", "datatype", 2, FD::TYPE_STRING, false},
    {"ModelInferResponse.InferOutputTensor", "shape", 3, FD::TYPE_INT64, true},
    {"ModelInferResponse.InferOutputTensor", "parameters", 4, FD::TYPE_MESSAGE, true},
    {"ModelInferResponse.InferOutputTensor", "contents", 5, FD::TYPE_MESSAGE, false},
    {"InferParameter", "bool_param", 1, FD::TYPE_BOOL, false},
    {"InferParameter", "int64_param", 2, FD::TYPE_INT64, false},
    {"InferParameter", "string_param", 3, FD::TYPE_STRING, false},
    {"InferParameter", "double_param", 4, FD::TYPE_DOUBLE, false},
    {"InferParameter", "uint64_param", 5, FD::TYPE_UINT64, false},
    {"InferTensorContents", "bool_contents", 1, FD::TYPE_BOOL, true},
    {"InferTensorContents", "int_contents", 2, FD::TYPE_INT32, true},
    {"InferTensorContents", "int64_contents", 3, FD::TYPE_INT64, true},
    {"InferTensorContents", "uint_contents", 4, FD::TYPE_UINT32, true},
    {"InferTensorContents", "uint64_contents", 5, FD::TYPE_UINT64, true},
    {"InferTensorContents", "fp32_contents", 6, FD::TYPE_FLOAT, true},
    {"InferTensorContents", "fp64_contents", 7, FD::TYPE_DOUBLE, true},
    {"InferTensorContents", "bytes_contents", 8, FD::TYPE_BYTES, true},
};

const google::protobuf::Descriptor* find_message(const std::string& name) {
  // Force the file's registration, then look the message up by its full name.
  (void)inference::ModelInferRequest::descriptor();
  return google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName("inference." + name);
}

TEST(KserveProto, FieldNumbersAreUpstream) {
  for (const UpstreamField& u : kUpstreamFields) {
    SCOPED_TRACE(std::string(u.message) + "." + u.field);
    const auto* message = find_message(u.message);
    ASSERT_NE(message, nullptr);
    const auto* field = message->FindFieldByName(u.field);
    ASSERT_NE(field, nullptr);
    EXPECT_EQ(field->number(), u.number);
    EXPECT_EQ(field->type(), u.type);
    EXPECT_EQ(field->is_repeated(), u.repeated);
  }
}

TEST(KserveProto, NoFieldsBeyondUpstream) {
  // Every field of the messages above is in the table: nothing was added under a new number.
  std::map<std::string, int> fields_per_message;
  for (const UpstreamField& u : kUpstreamFields) ++fields_per_message[u.message];
  for (const auto& [name, count] : fields_per_message) {
    SCOPED_TRACE(name);
    const auto* message = find_message(name);
    ASSERT_NE(message, nullptr);
    EXPECT_EQ(message->field_count(), count);
  }
  for (const char* empty : {"ServerLiveRequest", "ServerReadyRequest", "ServerMetadataRequest"}) {
    ASSERT_NE(find_message(empty), nullptr) << empty;
    EXPECT_EQ(find_message(empty)->field_count(), 0) << empty;
  }
}

TEST(KserveProto, ParameterMapsAndOneof) {
  for (const char* m :
       {"ModelInferRequest", "ModelInferRequest.InferInputTensor", "ModelInferRequest.InferRequestedOutputTensor",
        "ModelInferResponse", "ModelInferResponse.InferOutputTensor"}) {
    SCOPED_TRACE(m);
    const auto* field = find_message(m)->FindFieldByName("parameters");
    ASSERT_TRUE(field->is_map());
    EXPECT_EQ(field->message_type()->map_key()->type(), FD::TYPE_STRING);
    EXPECT_EQ(field->message_type()->map_value()->message_type()->full_name(), "inference.InferParameter");
  }
  const auto* oneof = find_message("InferParameter")->FindOneofByName("parameter_choice");
  ASSERT_NE(oneof, nullptr);
  EXPECT_EQ(oneof->field_count(), 5);
}

TEST(KserveProto, ServiceMethods) {
  const auto* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName("inference.GRPCInferenceService");
  ASSERT_NE(service, nullptr);
  const char* const methods[][3] = {
      {"ServerLive", "ServerLiveRequest", "ServerLiveResponse"},
      {"ServerReady", "ServerReadyRequest", "ServerReadyResponse"},
      {"ModelReady", "ModelReadyRequest", "ModelReadyResponse"},
      {"ServerMetadata", "ServerMetadataRequest", "ServerMetadataResponse"},
      {"ModelMetadata", "ModelMetadataRequest", "ModelMetadataResponse"},
      {"ModelInfer", "ModelInferRequest", "ModelInferResponse"},
  };
  for (const auto& m : methods) {
    SCOPED_TRACE(m[0]);
    const auto* method = service->FindMethodByName(m[0]);
    ASSERT_NE(method, nullptr);
    EXPECT_EQ(method->input_type()->full_name(), std::string("inference.") + m[1]);
    EXPECT_EQ(method->output_type()->full_name(), std::string("inference.") + m[2]);
    EXPECT_FALSE(method->client_streaming());
    EXPECT_FALSE(method->server_streaming());
  }
}

}  // namespace
}  // namespace tessera::kserve
