// Triton's binary tensor data extension over HTTP, against the real daemon, with requests laid
// out byte for byte as tritonclient.http sends them by default (triton_http.h): binary inputs
// (FP32 tensors, BYTES JPEG/PNG files), binary outputs (asked per output or for all, the
// classification extension's strings length-prefixed), mixed JSON and binary, and every bad
// form answered 400 {"error": ...} with the daemon still serving.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "tests/integration/daemon_test.h"
#include "tests/integration/fmnist_images.h"
#include "tests/integration/kserve/triton_http.h"
#include "tests/integration/kserve_client.h"

namespace tessera::testing {
namespace {

using nlohmann::json;

json binary_input(const std::string& name, const std::string& datatype, const std::vector<int64_t>& shape,
                  size_t bytes) {
  return {{"name", name}, {"shape", shape}, {"datatype", datatype}, {"parameters", {{"binary_data_size", bytes}}}};
}

// What tritonclient.http sends for infer(model, [InferInput]) with no outputs named.
std::string default_header(const json& input) {
  return json({{"inputs", {input}}, {"parameters", {{"binary_data_output", true}}}}).dump();
}

class KserveBinaryTest : public DaemonTest {
 protected:
  void SetUp() override {
    DaemonTest::SetUp();
    images_ = load_fmnist_images();
    ASSERT_GE(images_.size(), 4u) << "too few images in " << TESSERA_FMNIST_DIR;
    kserve_ = kserve_stub(*daemon_);
  }

  TritonReply post(const std::string& header, const std::string& binary,
                   const std::optional<std::string>& header_length = std::nullopt) {
    return triton_post(daemon_->http_port(), kFmnistInferPath, header, binary, header_length);
  }

  // The gRPC answer for the same image: the reference the HTTP answers must equal.
  inference::ModelInferResponse grpc_answer(const std::string& image, int classification = 0) {
    inference::ModelInferRequest request = bytes_request(image);
    if (classification > 0) {
      auto* out = request.add_outputs();
      out->set_name("probabilities");
      (*out->mutable_parameters())["classification"].set_int64_param(classification);
    }
    const KserveAnswer answer = kserve_infer(*kserve_, request);
    EXPECT_TRUE(answer.status.ok()) << answer.status.error_message();
    return answer.response;
  }

  static void expect_error(const TritonReply& reply, const std::string& says) {
    EXPECT_EQ(reply.status, 400) << reply.json().dump();
    ASSERT_TRUE(reply.json().is_object() && reply.json().contains("error")) << reply.json().dump();
    const std::string message = reply.json()["error"];
    EXPECT_NE(message.find(says), std::string::npos) << message;
  }

  std::vector<FmnistImage> images_;
  std::unique_ptr<inference::GRPCInferenceService::Stub> kserve_;
};

TEST_F(KserveBinaryTest, TritonDefaultFp32InferIsBinaryBothWays) {
  for (size_t i = 0; i < 3; ++i) {
    const std::string png = read_binary(images_[i].png);
    const std::string tensor = le_floats(preprocessed_input(png));
    ASSERT_EQ(tensor.size(), 3136u);
    const TritonReply reply = post(default_header(binary_input("input", "FP32", {1, 1, 28, 28}, 3136)), tensor);
    ASSERT_EQ(reply.status, 200) << reply.json().dump();
    EXPECT_EQ(reply.header("content-type"), "application/octet-stream");
    EXPECT_EQ(reply.header("inference-header-content-length"), std::to_string(reply.json().dump().size()));
    ASSERT_EQ(reply.json()["outputs"].size(), 1u) << reply.json().dump();
    const json answer = reply.json();
    const json& out = answer["outputs"][0];
    EXPECT_EQ(out["name"], "probabilities");
    EXPECT_EQ(out["datatype"], "FP32");
    EXPECT_EQ(out["shape"], json({1, 10}));
    EXPECT_EQ(out["parameters"]["binary_data_size"], 40);
    EXPECT_FALSE(out.contains("data"));
    ASSERT_EQ(reply.binary.size(), 40u);
    EXPECT_EQ(floats_of(reply.binary), output_floats(grpc_answer(png))) << images_[i].stem;
  }
}

TEST_F(KserveBinaryTest, BytesImagesWithBinaryClassification) {
  for (size_t i = 0; i < 4; ++i) {
    const std::string image = read_binary(i % 2 ? images_[i].jpg : images_[i].png);
    const std::string binary = length_prefixed({image});
    const json header = {
        {"id", "triton-" + std::to_string(i)},
        {"inputs", {binary_input("image", "BYTES", {1}, binary.size())}},
        {"outputs", {{{"name", "probabilities"}, {"parameters", {{"classification", 3}, {"binary_data", true}}}}}}};
    const TritonReply reply = post(header.dump(), binary);
    ASSERT_EQ(reply.status, 200) << reply.json().dump();
    EXPECT_EQ(reply.header("content-type"), "application/octet-stream");
    EXPECT_EQ(reply.json()["id"], "triton-" + std::to_string(i));
    const json answer = reply.json();
    const json& out = answer["outputs"][0];
    EXPECT_EQ(out["datatype"], "BYTES");
    EXPECT_EQ(out["shape"], json({1, 3}));
    EXPECT_EQ(out["parameters"]["binary_data_size"], reply.binary.size());
    const std::vector<std::string> strings = strings_of(reply.binary);
    ASSERT_EQ(strings.size(), 3u);
    EXPECT_EQ(length_prefixed(strings), reply.binary);  // nothing left over
    EXPECT_EQ(strings, output_strings(grpc_answer(image, 3))) << images_[i].stem;
  }
}

TEST_F(KserveBinaryTest, MixedJsonAndBinaryTensors) {
  const std::string png = read_binary(images_[1].png);
  const std::vector<float> tensor = preprocessed_input(png);
  const std::vector<float> want = output_floats(grpc_answer(png));

  // Binary in, JSON out: the output says binary_data false, which overrides binary_data_output.
  json header = {{"inputs", {binary_input("input", "FP32", {1, 1, 28, 28}, 3136)}},
                 {"outputs", {{{"name", "probabilities"}, {"parameters", {{"binary_data", false}}}}}},
                 {"parameters", {{"binary_data_output", true}}}};
  TritonReply reply = post(header.dump(), le_floats(tensor));
  ASSERT_EQ(reply.status, 200) << reply.json().dump();
  EXPECT_EQ(reply.header("content-type"), "application/json");
  EXPECT_EQ(reply.headers.count("inference-header-content-length"), 0u);
  EXPECT_TRUE(reply.binary.empty());
  EXPECT_EQ(reply.json()["outputs"][0]["data"].get<std::vector<float>>(), want);

  // JSON in (with the header giving the whole body as JSON), binary out.
  header = {{"inputs", {{{"name", "input"}, {"shape", {1, 1, 28, 28}}, {"datatype", "FP32"}, {"data", tensor}}}},
            {"outputs", {{{"name", "probabilities"}, {"parameters", {{"binary_data", true}}}}}}};
  reply = post(header.dump(), "");
  ASSERT_EQ(reply.status, 200) << reply.json().dump();
  EXPECT_EQ(reply.header("content-type"), "application/octet-stream");
  EXPECT_EQ(floats_of(reply.binary), want);

  // Unknown request parameters are ignored, as Triton hands them to the model.
  header = {{"inputs", {binary_input("image", "BYTES", {1, 1}, png.size() + 4)}},
            {"parameters", {{"binary_data_output", false}, {"my_app_tag", "x"}, {"priority", 0}}}};
  reply = post(header.dump(), length_prefixed({png}));
  ASSERT_EQ(reply.status, 200) << reply.json().dump();
  EXPECT_EQ(reply.json()["outputs"][0]["data"].get<std::vector<float>>(), want);
}

TEST_F(KserveBinaryTest, BadBinaryFormsAre400) {
  const std::string tensor = le_floats(std::vector<float>(28 * 28, 0.25f));
  const std::string fp32 = default_header(binary_input("input", "FP32", {1, 1, 28, 28}, 3136));
  expect_error(post(fp32, tensor, "abc"), "Inference-Header-Content-Length: 'abc' is not a number");
  expect_error(post(fp32, tensor, "-5"), "is not a number");
  expect_error(post(fp32, tensor, std::to_string(fp32.size() + tensor.size() + 1)), "is past the body's");
  expect_error(post(fp32, tensor, std::to_string(fp32.size() - 1)), "not valid JSON");
  // binary_data_size past the end, short of the data, or not matching the shape.
  expect_error(post(fp32, tensor.substr(0, 3000)), "3136 bytes, but 3000 follow the JSON header");
  expect_error(post(fp32, tensor + "xyz"), "3 bytes after the inputs' binary data");
  expect_error(post(default_header(binary_input("input", "FP32", {1, 1, 28, 28}, 3132)), tensor.substr(0, 3132)),
               "3132 bytes; FP32 shape needs 3136");
  expect_error(post(default_header(binary_input("input", "FP32", {2, 1, 28, 28}, 3136)), tensor),
               "3136 bytes; FP32 shape needs 6272");
  // A binary input that also has data; sizes that are not byte counts.
  json both = binary_input("input", "FP32", {1, 1, 28, 28}, 3136);
  both["data"] = std::vector<float>(28 * 28, 0.25f);
  expect_error(post(default_header(both), tensor), "given with binary_data_size");
  expect_error(post(default_header(binary_input("input", "FP32", {1, 1, 28, 28}, 0)), ""),
               "0 bytes; FP32 shape needs 3136");
  json negative = binary_input("input", "FP32", {1, 1, 28, 28}, 0);
  negative["parameters"]["binary_data_size"] = -1;
  expect_error(post(default_header(negative), tensor), "binary_data_size: -1; must be >= 0");
  negative["parameters"]["binary_data_size"] = "3136";
  expect_error(post(default_header(negative), tensor), "binary_data_size: must be an integer");
  // BYTES elements whose length prefix runs past the data, or that are not images.
  const std::string png = read_binary(images_[0].png);
  std::string cut = length_prefixed({png});
  cut.resize(cut.size() - 10);
  expect_error(post(default_header(binary_input("image", "BYTES", {1}, cut.size())), cut), "declares");
  const std::string text = length_prefixed({"not an image"});
  expect_error(post(default_header(binary_input("image", "BYTES", {1}, text.size())), text), "not a JPEG or PNG");
  // Binary data without the header giving the JSON's length: the body is not JSON.
  expect_error(post(fp32, tensor, ""), "not valid JSON (a NUL byte");
  json bad_flag = json::parse(fp32);
  bad_flag["parameters"]["binary_data_output"] = "yes";
  expect_error(post(bad_flag.dump(), tensor), "binary_data_output: must be true or false");

  // Still serving.
  const TritonReply reply = post(fp32, tensor);
  EXPECT_EQ(reply.status, 200) << reply.json().dump();
  EXPECT_EQ(reply.binary.size(), 40u);
}

}  // namespace
}  // namespace tessera::testing
