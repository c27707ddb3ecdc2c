// The CLI's KServe v2 codec against byte layouts written out by hand from Triton's
// docs/protocol/extension_binary_data.md and extension_classification.md: the request it sends
// (JSON header, Inference-Header-Content-Length, binary input after it, BYTES elements with a
// 4-byte little-endian length) and the answers it reads (binary outputs in the outputs' order,
// "score:index:label" strings), and the malformed answers it must refuse.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

#include "client/kserve/kserve_codec.h"

namespace tessera::client::kserve {
namespace {

using nlohmann::json;
using namespace std::string_literals;

InferSpec bytes_spec() {
  InferSpec spec;
  spec.model = "fashion-mnist";
  spec.id = "req-1";
  spec.input = {"image", "BYTES", {1}, "\x03\x00\x00\x00PNG"s};
  spec.output_name = "probabilities";
  spec.classification = 3;
  return spec;
}

TEST(KserveCodec, BytesElementsAreLengthPrefixedLittleEndian) {
  std::string raw;
  append_bytes_element(raw, "ab");
  append_bytes_element(raw, std::string(258, 'x'));
  EXPECT_EQ(raw.substr(0, 6),
            "\x02\x00\x00\x00"
            "ab"s);
  EXPECT_EQ(raw.substr(6, 4), "\x02\x01\x00\x00"s);  // 258 = 0x0102
  auto split = split_bytes_elements(raw);
  ASSERT_TRUE(split.is_ok());
  ASSERT_EQ(split->size(), 2u);
  EXPECT_EQ((*split)[0], "ab");
  EXPECT_EQ((*split)[1].size(), 258u);
  EXPECT_FALSE(split_bytes_elements("\x05\x00\x00\x00"
                                    "abc"s)
                   .is_ok())
      << "element past the end";
  EXPECT_FALSE(split_bytes_elements("\x01\x00"s).is_ok()) << "cut length prefix";
  EXPECT_TRUE(split_bytes_elements("").is_ok());
}

TEST(KserveCodec, BinaryRequestIsTheJsonHeaderThenTheInputBytes) {
  const HttpBody body = http_request(bytes_spec(), true, true);
  ASSERT_TRUE(body.header_length.has_value());
  const json header = json::parse(body.bytes.substr(0, *body.header_length));
  EXPECT_EQ(body.bytes.substr(*body.header_length), "\x03\x00\x00\x00PNG"s);
  EXPECT_EQ(header["id"], "req-1");
  const json& input = header["inputs"][0];
  EXPECT_EQ(input["name"], "image");
  EXPECT_EQ(input["datatype"], "BYTES");
  EXPECT_EQ(input["shape"], json::array({1}));
  EXPECT_EQ(input["parameters"]["binary_data_size"], 7);
  EXPECT_FALSE(input.contains("data"));
  const json& output = header["outputs"][0];
  EXPECT_EQ(output["name"], "probabilities");
  EXPECT_EQ(output["parameters"]["classification"], 3);
  EXPECT_EQ(output["parameters"]["binary_data"], true);
}

TEST(KserveCodec, JsonRequestCarriesTheDataInline) {
  const HttpBody bytes = http_request(bytes_spec(), false, false);
  EXPECT_FALSE(bytes.header_length.has_value());
  const json b = json::parse(bytes.bytes);
  EXPECT_EQ(b["inputs"][0]["data"], json::array({"UE5H"}));  // base64("PNG")
  EXPECT_FALSE(b["outputs"][0]["parameters"].contains("binary_data"));
  InferSpec fp32 = bytes_spec();
  const float values[2] = {0.5f, -2.0f};
  fp32.input = {"input", "FP32", {1, 2}, std::string(reinterpret_cast<const char*>(values), sizeof values)};
  const json f = json::parse(http_request(fp32, false, false).bytes);
  EXPECT_EQ(f["inputs"][0]["data"], json::array({0.5, -2.0}));
}

TEST(KserveCodec, ReadsBinaryOutputsInTheirOrder) {
  // Two outputs: an FP32 tensor of 8 bytes first, then the classification strings, both binary.
  std::string strings;
  append_bytes_element(strings, "0.970000:9:Ankle boot");
  append_bytes_element(strings, "0.020000:7");
  const std::string header =
      json{{"model_name", "fashion-mnist"},
           {"model_version", "2"},
           {"id", "req-1"},
           {"outputs",
            {{{"name", "raw"}, {"datatype", "FP32"}, {"shape", {1, 2}}, {"parameters", {{"binary_data_size", 8}}}},
             {{"name", "probabilities"},
              {"datatype", "BYTES"},
              {"shape", {1, 2}},
              {"parameters", {{"binary_data_size", strings.size()}}}}}}}
          .dump();
  const std::string body = header + std::string(8, '\0') + strings;
  auto answer = http_answer(body, header.size(), "probabilities");
  ASSERT_TRUE(answer.is_ok()) << answer.status().to_string();
  EXPECT_EQ(answer->model_name, "fashion-mnist");
  EXPECT_EQ(answer->model_version, "2");
  ASSERT_EQ(answer->classes.size(), 2u);
  EXPECT_FLOAT_EQ(answer->classes[0].score, 0.97f);
  EXPECT_EQ(answer->classes[0].index, 9);
  EXPECT_EQ(answer->classes[0].label, "Ankle boot");
  EXPECT_EQ(answer->classes[1].index, 7);
  EXPECT_EQ(answer->classes[1].label, "");
}

TEST(KserveCodec, ReadsJsonOutputs) {
  const std::string body = R"({"model_name":"m","outputs":[{"name":"probabilities","datatype":"BYTES","shape":[1,1],)"
                           R"("data":["0.5:3:Dress"]}]})";
  auto answer = http_answer(body, std::nullopt, "probabilities");
  ASSERT_TRUE(answer.is_ok()) << answer.status().to_string();
  ASSERT_EQ(answer->classes.size(), 1u);
  EXPECT_EQ(answer->classes[0].label, "Dress");
}

TEST(KserveCodec, RefusesMalformedAnswers) {
  const std::string ok_header = R"({"outputs":[{"name":"p","datatype":"BYTES","parameters":{"binary_data_size":20}}]})";
  EXPECT_FALSE(http_answer(ok_header + "short", ok_header.size(), "p").is_ok()) << "binary size past the body";
  EXPECT_FALSE(http_answer("{}", 10, "p").is_ok()) << "header length past the body";
  EXPECT_FALSE(http_answer("not json", std::nullopt, "p").is_ok());
  EXPECT_FALSE(http_answer(R"({"outputs":[]})", std::nullopt, "p").is_ok()) << "no such output";
  EXPECT_FALSE(http_answer(R"({"outputs":[{"name":"p","datatype":"FP32","data":[1]}]})", std::nullopt, "p").is_ok());
  EXPECT_FALSE(
      http_answer(R"({"outputs":[{"name":"p","datatype":"BYTES","data":["x:y"]}]})", std::nullopt, "p").is_ok());
  EXPECT_FALSE(http_answer(R"({"outputs":[{"name":"p","datatype":"BYTES","parameters":{"binary_data_size":-1}}]})",
                           std::nullopt, "p")
                   .is_ok());
  EXPECT_FALSE(parse_classification("0.5").is_ok());
  EXPECT_FALSE(parse_classification(":1:a").is_ok());
  EXPECT_TRUE(parse_classification("1e-05:0:T-shirt/top").is_ok());
}

TEST(KserveCodec, GrpcRequestAndAnswer) {
  const inference::ModelInferRequest request = grpc_request(bytes_spec());
  EXPECT_EQ(request.model_name(), "fashion-mnist");
  ASSERT_EQ(request.inputs_size(), 1);
  EXPECT_EQ(request.inputs(0).datatype(), "BYTES");
  ASSERT_EQ(request.raw_input_contents_size(), 1);
  EXPECT_EQ(request.raw_input_contents(0), "\x03\x00\x00\x00PNG"s);
  EXPECT_EQ(request.outputs(0).parameters().at("classification").int64_param(), 3);

  inference::ModelInferResponse response;
  response.set_model_name("fashion-mnist");
  auto* out = response.add_outputs();
  out->set_name("probabilities");
  out->set_datatype("BYTES");
  std::string raw;
  append_bytes_element(raw, "0.800000:1:Trouser");
  response.add_raw_output_contents(raw);
  auto answer = grpc_answer(response, "probabilities");
  ASSERT_TRUE(answer.is_ok()) << answer.status().to_string();
  EXPECT_EQ(answer->classes.at(0).label, "Trouser");
  // The strings in contents instead of raw_output_contents.
  response.clear_raw_output_contents();
  response.mutable_outputs(0)->mutable_contents()->add_bytes_contents("0.1:4:Coat");
  answer = grpc_answer(response, "probabilities");
  ASSERT_TRUE(answer.is_ok());
  EXPECT_EQ(answer->classes.at(0).index, 4);
  EXPECT_FALSE(grpc_answer(response, "other").is_ok());
}

}  // namespace
}  // namespace tessera::client::kserve
