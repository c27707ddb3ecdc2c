// The KServe v2 codec (server/kserve/decode_json.h): inference requests in the JSON (REST)
// protocol — base64 images, FP32 and UINT8 tensors, structure errors, requested outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "server/kserve/decode_json.h"
#include "tests/unit/server/kserve/kserve_codec_test_support.h"

namespace tessera::kserve {
namespace {

using codec_test::as_vector;
using codec_test::b64;
using codec_test::decode;
using codec_test::expect_error;
using codec_test::json_fp32_request;
using codec_test::json_png_request;
using codec_test::png_bytes;
using codec_test::test_model;
using nlohmann::json;

TEST(KserveJsonDecode, Base64Image) {
  auto r = decode(json_png_request());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->id, "j-1");
  EXPECT_EQ(r->images[0].name, "image");
  EXPECT_EQ(r->images[0].kind, InputKind::kEncodedImage);
  EXPECT_EQ(r->images[0].encoded_image, as_vector(png_bytes()));

  json nested = json_png_request();
  nested["inputs"][0]["shape"] = {1, 1};
  nested["inputs"][0]["data"] = json::array({json::array({b64(png_bytes())})});
  nested["inputs"][0]["parameters"] = {{"content_type", "base64"}};
  auto n = decode(nested);
  ASSERT_TRUE(n.is_ok()) << n.status().to_string();
  EXPECT_EQ(n->images[0].encoded_image, as_vector(png_bytes()));
}

TEST(KserveJsonDecode, FromBodyText) {
  auto r = decode_infer_request_body(json_png_request().dump(), test_model());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->images[0].encoded_image, as_vector(png_bytes()));

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
  expect_error(decode(binary), "inputs[0].data: given with binary_data_size");
  binary["inputs"][0].erase("data");
  expect_error(decode(binary), "binary data needs the Inference-Header-Content-Length header");

  json not_image = json_png_request();
  not_image["inputs"][0]["data"] = {b64("hello world")};
  expect_error(decode(not_image), "inputs[0].data[0]: the BYTES element is not a JPEG or PNG file");
}

TEST(KserveJsonDecode, Fp32FlatAndNested) {
  json flat = json::array();
  for (int i = 0; i < 16; ++i) flat.push_back(i * 0.25);
  auto r = decode(json_fp32_request(flat));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->images[0].kind, InputKind::kFloatTensor);
  EXPECT_FLOAT_EQ(r->images[0].tensor[5], 1.25f);

  json nested = json::array();  // [1][1][4][4]
  json rows = json::array();
  for (int y = 0; y < 4; ++y) rows.push_back({y * 4, y * 4 + 1, y * 4 + 2, y * 4 + 3});
  nested.push_back(json::array({rows}));
  auto n = decode(json_fp32_request(nested));
  ASSERT_TRUE(n.is_ok()) << n.status().to_string();
  EXPECT_FLOAT_EQ(n->images[0].tensor[13], 13.0f);

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
  EXPECT_EQ(r->images[0].kind, InputKind::kPixels);
  EXPECT_EQ(r->images[0].pixels.pixels, (std::vector<uint8_t>{0, 64, 128, 255}));

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

}  // namespace
}  // namespace tessera::kserve
