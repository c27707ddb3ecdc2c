// The KServe v2 codec's batches, Triton's binary tensor data extension (HTTP bodies built here
// byte by byte from the protocol document: the JSON header, then the binary tensors) and the
// request parameters Triton reads (timeout, priority, binary_data_output).
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "server/kserve/infer_response.h"
#include "tests/unit/server/kserve/kserve_codec_test_support.h"

namespace tessera::kserve {
namespace {

using codec_test::as_vector;
using codec_test::decode;
using codec_test::expect_error;
using codec_test::grpc_request;
using codec_test::png_bytes;
using inference::ModelInferRequest;
using nlohmann::json;

// The test model (1x4x4 in, 3 classes) taking batches of up to 4 images.
ModelSignature batch_model() {
  ModelSignature m = codec_test::test_model();
  m.max_batch = 4;
  return m;
}

std::string le32(uint32_t v) {
  std::string out;
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  return out;
}

std::string le_floats(const std::vector<float>& values) {
  std::string out;
  for (float v : values) out += le32(std::bit_cast<uint32_t>(v));
  return out;
}

json binary_input(const std::string& datatype, const json& shape, size_t bytes) {
  return {{"name", "input"}, {"shape", shape}, {"datatype", datatype}, {"parameters", {{"binary_data_size", bytes}}}};
}

// Decodes a binary-extension body: the JSON header, then `binary`.
Result<InferRequest> decode_binary(const json& header, const std::string& binary, const ModelSignature& model) {
  const std::string text = header.dump();
  return decode_infer_request_body(text + binary, model, {}, nullptr, std::to_string(text.size()));
}

std::vector<float> ramp(size_t n, float from) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = from + static_cast<float>(i);
  return v;
}

TEST(KserveBinaryDecode, Fp32BatchSplitsIntoImages) {
  const std::vector<float> values = ramp(48, 0.5f);
  auto r = decode_binary({{"inputs", {binary_input("FP32", {3, 1, 4, 4}, 192)}}}, le_floats(values), batch_model());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->images.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(r->images[i].kind, InputKind::kFloatTensor);
    EXPECT_EQ(r->images[i].name, "input");
    EXPECT_EQ(r->images[i].tensor, std::vector<float>(values.begin() + 16 * i, values.begin() + 16 * (i + 1)));
  }
}

TEST(KserveBinaryDecode, BytesAndUint8) {
  const std::string png = png_bytes();
  const std::string two = le32(static_cast<uint32_t>(png.size())) + png + le32(static_cast<uint32_t>(png.size())) + png;
  auto r = decode_binary({{"inputs", {binary_input("BYTES", {2, 1}, two.size())}}}, two, batch_model());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->images.size(), 2u);
  EXPECT_EQ(r->images[1].encoded_image, as_vector(png));

  std::string pixels;
  for (int i = 0; i < 2 * 2 * 3 * 2; ++i) pixels.push_back(static_cast<char>(i * 10));
  auto p = decode_binary({{"inputs", {binary_input("UINT8", {2, 2, 3, 2}, 24)}}}, pixels, batch_model());
  expect_error(p, "has C = 2");
  p = decode_binary({{"inputs", {binary_input("UINT8", {2, 2, 2, 3}, 24)}}}, pixels, batch_model());
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  ASSERT_EQ(p->images.size(), 2u);
  EXPECT_EQ(p->images[1].pixels.pixels.front(), 120);
}

TEST(KserveBinaryDecode, EveryBadFormIsAClearError) {
  const std::string data = le_floats(ramp(16, 0));
  const std::string header = json({{"inputs", {binary_input("FP32", {1, 1, 4, 4}, 64)}}}).dump();
  const ModelSignature m = batch_model();
  expect_error(decode_infer_request_body(header + data, m, {}, nullptr, "12x"), "'12x' is not a number");
  expect_error(decode_infer_request_body(header + data, m, {}, nullptr, ""), "'' is not a number");
  expect_error(decode_infer_request_body(header + data, m, {}, nullptr, "99999999999999999999999"), "is not a number");
  expect_error(decode_infer_request_body(header + data, m, {}, nullptr, std::to_string(header.size() + 65)),
               "is past the body's");
  expect_error(decode_infer_request_body(header + data.substr(1), m, {}, nullptr, std::to_string(header.size())),
               "64 bytes, but 63 follow");
  expect_error(decode_infer_request_body(header + data + "!", m, {}, nullptr, std::to_string(header.size())),
               "1 bytes after the inputs' binary data");
  // A body of JSON and binary without the header: a NUL ends nlohmann's input, so it is refused first.
  expect_error(decode_infer_request_body(header + data, m), "a NUL byte at byte");
  expect_error(decode_infer_request_body(header + "x", m), "not valid JSON");
  // BYTES: a length prefix past the data, a short prefix, more elements than the shape.
  const std::string cut = le32(100) + "abc";
  expect_error(decode_binary({{"inputs", {binary_input("BYTES", {1}, cut.size())}}}, cut, m), "declares 100 bytes");
  expect_error(decode_binary({{"inputs", {binary_input("BYTES", {1}, 2)}}}, "ab", m), "2-byte length prefix");
  const std::string png = le32(static_cast<uint32_t>(png_bytes().size())) + png_bytes();
  expect_error(decode_binary({{"inputs", {binary_input("BYTES", {1}, 2 * png.size())}}}, png + png, m),
               "2 elements; the shape needs 1");
}

TEST(KserveBatchDecode, BatchesUpToTheMax) {
  const ModelSignature m = batch_model();
  ModelInferRequest req = grpc_request("BYTES", {3});
  for (int i = 0; i < 3; ++i) req.mutable_inputs(0)->mutable_contents()->add_bytes_contents(png_bytes());
  auto r = decode_infer_request(req, m);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->images.size(), 3u);
  req = grpc_request("BYTES", {5});
  for (int i = 0; i < 5; ++i) req.mutable_inputs(0)->mutable_contents()->add_bytes_contents(png_bytes());
  expect_error(decode_infer_request(req, m),
               "inputs[0].shape: [5] is a batch of 5 images; model 'fmnist' takes at most 4 (its max batch)");

  const json body = codec_test::json_fp32_request(ramp(32, 0), {2, 1, 4, 4});
  auto j = decode_infer_request_json(body, m);
  ASSERT_TRUE(j.is_ok()) << j.status().to_string();
  ASSERT_EQ(j->images.size(), 2u);
  EXPECT_FLOAT_EQ(j->images[1].tensor[0], 16.0f);
  expect_error(decode_infer_request_json(codec_test::json_fp32_request(ramp(16, 0), {2, 1, 4, 4}), m),
               "16 elements; the shape needs 32");
}

TEST(KserveParameters, TimeoutPriorityAndUnknownOnes) {
  json body = codec_test::json_png_request();
  body["parameters"] = {{"timeout", 2500}, {"priority", 2}, {"sequence_id", 7}, {"anything", "else"}};
  auto r = decode(body);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->timeout_us, 2500u);
  EXPECT_FALSE(r->binary_data_output);
  body["parameters"] = {{"timeout", -1}};
  expect_error(decode(body), "parameters.timeout: -1");
  body["parameters"] = {{"timeout", 1.5}};
  expect_error(decode(body), "parameters.timeout: must be an integer");
  body["parameters"] = {{"priority", -2}};
  expect_error(decode(body), "parameters.priority: -2");

  ModelInferRequest req = codec_test::grpc_png_request();
  (*req.mutable_parameters())["timeout"].set_uint64_param(900);
  (*req.mutable_parameters())["my_tag"].set_string_param("x");
  auto g = decode(req);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  EXPECT_EQ(g->timeout_us, 900u);
  (*req.mutable_parameters())["timeout"].set_bool_param(true);
  expect_error(decode(req), "parameters.timeout: must be an integer");
}

TEST(KserveBinaryResponse, BinaryOutputsFollowTheJsonHeader) {
  InferRequest request;
  request.id = "b";
  request.binary_data_output = true;
  const ImageScores scores = {{0.2f, 0.7f, 0.1f}, {0.6f, 0.3f, 0.1f}};
  HttpInferBody out = infer_response_http(request, batch_model(), scores);
  EXPECT_TRUE(out.binary);
  const json header = json::parse(out.body.substr(0, out.json_length));
  EXPECT_EQ(header["outputs"][0]["shape"], json({2, 3}));
  EXPECT_EQ(header["outputs"][0]["parameters"]["binary_data_size"], 24);
  EXPECT_FALSE(header["outputs"][0].contains("data"));
  EXPECT_EQ(out.body.substr(out.json_length), le_floats({0.2f, 0.7f, 0.1f, 0.6f, 0.3f, 0.1f}));

  // Classification, asked binary per output while the request says JSON: [N,K] strings,
  // length-prefixed in request order.
  request.binary_data_output = false;
  request.outputs = {{"probabilities", 1, true}};
  out = infer_response_http(request, batch_model(), scores);
  const json k_header = json::parse(out.body.substr(0, out.json_length));
  EXPECT_EQ(k_header["outputs"][0]["datatype"], "BYTES");
  EXPECT_EQ(k_header["outputs"][0]["shape"], json({2, 1}));
  EXPECT_EQ(out.body.substr(out.json_length), le32(14) + "0.700000:1:dog" + le32(14) + "0.600000:0:cat");

  // Nothing binary: plain JSON, the whole body.
  request.outputs = {{"probabilities", 0, false}};
  out = infer_response_http(request, batch_model(), scores);
  EXPECT_FALSE(out.binary);
  EXPECT_EQ(out.json_length, out.body.size());
  EXPECT_EQ(json::parse(out.body)["outputs"][0]["data"].size(), 6u);
}

}  // namespace
}  // namespace tessera::kserve
