// The KServe v2 codec, outbound: inference responses (gRPC and JSON), server and model metadata,
// error bodies, and the base64 codec both directions use.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "server/kserve/base64.h"
#include "server/kserve/error_json.h"
#include "server/kserve/infer_response.h"
#include "server/kserve/metadata.h"
#include "tests/unit/server/kserve/kserve_codec_test_support.h"

namespace tessera::kserve {
namespace {

using codec_test::add_classification;
using codec_test::as_vector;
using codec_test::decode;
using codec_test::expect_error;
using codec_test::grpc_png_request;
using codec_test::grpc_request;
using codec_test::json_png_request;
using codec_test::test_model;
using inference::ModelInferRequest;
using nlohmann::json;

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
  const auto response = make_infer_response(request, test_model(), {kProbabilities});
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
  const auto response = make_infer_response(*request, test_model(), {kProbabilities});
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
  const json body = infer_response_json(*request, test_model(), {kProbabilities});
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
  const json k_body = infer_response_json(*k_request, test_model(), {kProbabilities});
  EXPECT_FALSE(k_body.contains("id"));
  EXPECT_EQ(k_body["outputs"][0]["datatype"], "BYTES");
  EXPECT_EQ(k_body["outputs"][0]["shape"], json({1, 1}));
  EXPECT_EQ(k_body["outputs"][0]["data"], json({"0.700000:1:dog"}));
}

// ---------------------------------------------------------------------------------------------
// Metadata and errors

TEST(KserveMetadata, Server) {
  const auto proto = make_server_metadata("0.1.0", false);
  EXPECT_EQ(proto.name(), "tesserad");
  EXPECT_EQ(proto.version(), "0.1.0");
  std::vector<std::string> extensions = {"classification", "model_repository", "model_configuration", "statistics",
                                         "binary_tensor_data"};
  EXPECT_EQ(std::vector<std::string>(proto.extensions().begin(), proto.extensions().end()), extensions);
  EXPECT_EQ(server_metadata_json("0.1.0", false),
            json({{"name", "tesserad"}, {"version", "0.1.0"}, {"extensions", extensions}}));
  extensions.emplace_back("system_shared_memory");
  EXPECT_EQ(server_metadata_json("0.1.0", true)["extensions"], json(extensions));
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

}  // namespace
}  // namespace tessera::kserve
