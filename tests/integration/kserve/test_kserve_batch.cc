// Batched KServe requests against the real daemon (the bundled model, max batch 8): FP32
// [N,C,H,W], UINT8 [N,H,W,C] and BYTES [N] / [N,1] inputs over gRPC ModelInfer and HTTP (JSON
// and binary), each row of the answer equal to the answer for that image sent alone; a batch
// over the max, and one bad image in a batch, fail the whole request; Triton's "timeout"
// request parameter becomes the request's deadline.
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

constexpr size_t kClasses = 10;
constexpr int kMaxBatch = 8;  // tesserad's default --max-batch; the bundled model keeps it

inference::ModelInferRequest batch_request(const std::string& datatype, const std::vector<int64_t>& shape) {
  inference::ModelInferRequest request;
  request.set_model_name(kFmnistModel);
  request.set_id("batch");
  auto* input = request.add_inputs();
  input->set_name("input");
  input->set_datatype(datatype);
  for (int64_t d : shape) input->add_shape(d);
  return request;
}

std::vector<float> row(const std::vector<float>& values, size_t i) {
  if (values.size() < (i + 1) * kClasses) return {};
  return {values.begin() + static_cast<std::ptrdiff_t>(i * kClasses),
          values.begin() + static_cast<std::ptrdiff_t>((i + 1) * kClasses)};
}

class KserveBatchTest : public DaemonTest {
 protected:
  void SetUp() override {
    DaemonTest::SetUp();
    images_ = load_fmnist_images();
    ASSERT_GE(images_.size(), 10u) << "too few images in " << TESSERA_FMNIST_DIR;
    kserve_ = kserve_stub(*daemon_);
  }

  std::string image(size_t i) const { return read_binary(i % 2 ? images_[i].jpg : images_[i].png); }

  // The answer for image `i` sent alone.
  std::vector<float> single(size_t i) {
    const KserveAnswer answer = kserve_infer(*kserve_, bytes_request(image(i)));
    EXPECT_TRUE(answer.status.ok()) << answer.status.error_message();
    return output_floats(answer.response);
  }

  std::vector<int64_t> shape_of(const inference::ModelInferResponse& response) {
    if (response.outputs_size() < 1) return {};
    return {response.outputs(0).shape().begin(), response.outputs(0).shape().end()};
  }

  std::vector<FmnistImage> images_;
  std::unique_ptr<inference::GRPCInferenceService::Stub> kserve_;
};

TEST_F(KserveBatchTest, GrpcBatchesEqualSingleImageAnswers) {
  // FP32 [4,1,28,28], raw.
  std::vector<float> tensors;
  for (size_t i = 0; i < 4; ++i) {
    const std::vector<float> one = preprocessed_input(image(i));
    tensors.insert(tensors.end(), one.begin(), one.end());
  }
  inference::ModelInferRequest request = batch_request("FP32", {4, 1, 28, 28});
  request.add_raw_input_contents(le_floats(tensors));
  KserveAnswer answer = kserve_infer(*kserve_, request);
  ASSERT_TRUE(answer.status.ok()) << answer.status.error_message();
  EXPECT_EQ(answer.response.id(), "batch");
  EXPECT_EQ(shape_of(answer.response), (std::vector<int64_t>{4, 10}));
  const std::vector<float> fp32 = output_floats(answer.response);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(row(fp32, i), single(i)) << "FP32 image " << i;

  // BYTES [3] in bytes_contents, with classification 2: shape [3,2], rows in request order.
  request = batch_request("BYTES", {3});
  for (size_t i = 0; i < 3; ++i) request.mutable_inputs(0)->mutable_contents()->add_bytes_contents(image(i + 4));
  auto* output = request.add_outputs();
  output->set_name("probabilities");
  (*output->mutable_parameters())["classification"].set_int64_param(2);
  answer = kserve_infer(*kserve_, request);
  ASSERT_TRUE(answer.status.ok()) << answer.status.error_message();
  EXPECT_EQ(shape_of(answer.response), (std::vector<int64_t>{3, 2}));
  const std::vector<std::string> strings = output_strings(answer.response);
  ASSERT_EQ(strings.size(), 6u);
  for (size_t i = 0; i < 3; ++i) {
    const int top = argmax(single(i + 4));
    EXPECT_NE(strings[2 * i].find(":" + std::to_string(top) + ":"), std::string::npos) << strings[2 * i];
  }

  // UINT8 [2,28,28,1] pixels, raw: each row equals the image's own answer.
  std::string pixels;
  for (size_t i = 0; i < 2; ++i) {
    int width = 0;
    int height = 0;
    const std::vector<uint8_t> one = decoded_gray_pixels(read_binary(images_[2 * i].png), &width, &height);
    ASSERT_EQ(width * height, 28 * 28);
    pixels.append(one.begin(), one.end());
  }
  request = batch_request("UINT8", {2, 28, 28, 1});
  request.add_raw_input_contents(pixels);
  answer = kserve_infer(*kserve_, request);
  ASSERT_TRUE(answer.status.ok()) << answer.status.error_message();
  EXPECT_EQ(shape_of(answer.response), (std::vector<int64_t>{2, 10}));
  for (size_t i = 0; i < 2; ++i) EXPECT_EQ(row(output_floats(answer.response), i), single(2 * i)) << "UINT8 " << i;
}

TEST_F(KserveBatchTest, HttpJsonAndBinaryBatchesEqualSingleImageAnswers) {
  const int port = daemon_->http_port();
  // JSON: BYTES [3,1] of base64 files.
  json body = {{"inputs", {{{"name", "image"}, {"datatype", "BYTES"}, {"shape", {3, 1}}, {"data", json::array()}}}}};
  for (size_t i = 0; i < 3; ++i) body["inputs"][0]["data"].push_back({base64(image(i))});
  TritonReply reply = triton_post(port, kFmnistInferPath, body.dump(), "", "");
  ASSERT_EQ(reply.status, 200) << reply.json().dump();
  EXPECT_EQ(reply.json()["outputs"][0]["shape"], json({3, 10}));
  const auto data = reply.json()["outputs"][0]["data"].get<std::vector<float>>();
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(row(data, i), single(i)) << "JSON image " << i;

  // Binary: FP32 [8,1,28,28] (the max batch) in, binary out.
  std::vector<float> tensors;
  for (size_t i = 0; i < kMaxBatch; ++i) {
    const std::vector<float> one = preprocessed_input(image(i));
    tensors.insert(tensors.end(), one.begin(), one.end());
  }
  const std::string binary = le_floats(tensors);
  const json header = {{"inputs",
                        {{{"name", "input"},
                          {"shape", {kMaxBatch, 1, 28, 28}},
                          {"datatype", "FP32"},
                          {"parameters", {{"binary_data_size", binary.size()}}}}}},
                       {"parameters", {{"binary_data_output", true}}}};
  reply = triton_post(port, kFmnistInferPath, header.dump(), binary);
  ASSERT_EQ(reply.status, 200) << reply.json().dump();
  EXPECT_EQ(reply.json()["outputs"][0]["shape"], json({kMaxBatch, 10}));
  ASSERT_EQ(reply.binary.size(), kMaxBatch * kClasses * 4);
  const std::vector<float> floats = floats_of(reply.binary);
  for (size_t i = 0; i < kMaxBatch; ++i) EXPECT_EQ(row(floats, i), single(i)) << "binary image " << i;
}

TEST_F(KserveBatchTest, BatchOverTheMaxIsRefusedNamingBoth) {
  const std::vector<float> one = preprocessed_input(image(0));
  std::vector<float> tensors;
  for (int i = 0; i <= kMaxBatch; ++i) tensors.insert(tensors.end(), one.begin(), one.end());
  inference::ModelInferRequest request = batch_request("FP32", {kMaxBatch + 1, 1, 28, 28});
  request.add_raw_input_contents(le_floats(tensors));
  const KserveAnswer answer = kserve_infer(*kserve_, request);
  EXPECT_EQ(answer.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(answer.status.error_message().find("batch of 9 images; model 'fashion-mnist' takes at most 8"),
            std::string::npos)
      << answer.status.error_message();

  const std::string binary = le_floats(tensors);
  const json header = {{"inputs",
                        {{{"name", "input"},
                          {"shape", {kMaxBatch + 1, 1, 28, 28}},
                          {"datatype", "FP32"},
                          {"parameters", {{"binary_data_size", binary.size()}}}}}}};
  const TritonReply reply = triton_post(daemon_->http_port(), kFmnistInferPath, header.dump(), binary);
  EXPECT_EQ(reply.status, 400) << reply.json().dump();
  EXPECT_NE(reply.json().value("error", "").find("batch of 9 images"), std::string::npos) << reply.json().dump();

  request = batch_request("BYTES", {0});
  EXPECT_EQ(kserve_infer(*kserve_, request).status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(KserveBatchTest, OneBadImageFailsTheWholeRequest) {
  std::string truncated = read_binary(images_[1].jpg);
  ASSERT_GT(truncated.size(), 100u);
  truncated.resize(truncated.size() / 2);  // the magic is there, the scan is not: fails in the worker
  inference::ModelInferRequest request = batch_request("BYTES", {3});
  for (const std::string& file : {image(0), truncated, image(2)}) {
    request.mutable_inputs(0)->mutable_contents()->add_bytes_contents(file);
  }
  const KserveAnswer answer = kserve_infer(*kserve_, request);
  EXPECT_EQ(answer.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << answer.status.error_message();
  EXPECT_EQ(answer.response.outputs_size(), 0);

  json body = {{"inputs", {{{"name", "image"}, {"datatype", "BYTES"}, {"shape", {3}}}}}};
  body["inputs"][0]["data"] = {base64(image(0)), base64(truncated), base64(image(2))};
  const TritonReply reply = triton_post(daemon_->http_port(), kFmnistInferPath, body.dump(), "", "");
  EXPECT_EQ(reply.status, 400) << reply.json().dump();
  EXPECT_TRUE(reply.json().contains("error")) << reply.json().dump();

  // Still serving, batches included.
  request = batch_request("BYTES", {2});
  for (size_t i = 0; i < 2; ++i) request.mutable_inputs(0)->mutable_contents()->add_bytes_contents(image(i));
  EXPECT_TRUE(kserve_infer(*kserve_, request).status.ok());
}

TEST_F(KserveBatchTest, TimeoutParameterBecomesTheDeadline) {
  // 1 us has passed before any worker can take the job: it is dropped, DEADLINE_EXCEEDED.
  inference::ModelInferRequest request = bytes_request(image(0));
  (*request.mutable_parameters())["timeout"].set_int64_param(1);
  EXPECT_EQ(kserve_infer(*kserve_, request).status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  (*request.mutable_parameters())["timeout"].set_int64_param(60'000'000);
  EXPECT_TRUE(kserve_infer(*kserve_, request).status.ok());
  (*request.mutable_parameters())["timeout"].set_string_param("soon");
  const KserveAnswer wrong = kserve_infer(*kserve_, request);
  EXPECT_EQ(wrong.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(wrong.status.error_message().find("parameters.timeout"), std::string::npos);

  json body = {{"inputs", {{{"name", "image"}, {"datatype", "BYTES"}, {"shape", {1}}, {"data", {base64(image(0))}}}}},
               {"parameters", {{"timeout", 1}}}};
  TritonReply reply = triton_post(daemon_->http_port(), kFmnistInferPath, body.dump(), "", "");
  EXPECT_EQ(reply.status, 504) << reply.json().dump();
  body["parameters"]["timeout"] = -3;
  reply = triton_post(daemon_->http_port(), kFmnistInferPath, body.dump(), "", "");
  EXPECT_EQ(reply.status, 400) << reply.json().dump();
}

}  // namespace
}  // namespace tessera::testing
