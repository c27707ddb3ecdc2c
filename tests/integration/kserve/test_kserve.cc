// inference.GRPCInferenceService (KServe v2 over gRPC) against the real daemon, with the generated
// C++ stub: health, metadata, inference from images and tensors, the classification extension,
// and the error codes.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "tests/integration/daemon_test.h"
#include "tests/integration/fmnist_images.h"
#include "tests/integration/kserve_client.h"

namespace tessera::testing {
namespace {

class KserveGrpcTest : public DaemonTest {
 protected:
  void SetUp() override {
    DaemonTest::SetUp();
    images_ = load_fmnist_images();
    ASSERT_GE(images_.size(), 10u) << "too few images in " << TESSERA_FMNIST_DIR
                                   << " (the make_fmnist_images fixture writes them)";
    kserve_ = kserve_stub(*daemon_);
  }

  // The FP32 probabilities for one request, asserting it succeeded.
  std::vector<float> probabilities(const inference::ModelInferRequest& request) {
    const KserveAnswer answer = kserve_infer(*kserve_, request);
    EXPECT_TRUE(answer.status.ok()) << answer.status.error_message();
    if (!answer.status.ok()) return {};
    EXPECT_EQ(answer.response.outputs_size(), 1);
    EXPECT_EQ(answer.response.outputs(0).datatype(), "FP32");
    return output_floats(answer.response);
  }

  void expect_code(const inference::ModelInferRequest& request, grpc::StatusCode code, const std::string& says) {
    const KserveAnswer answer = kserve_infer(*kserve_, request);
    EXPECT_EQ(answer.status.error_code(), code) << answer.status.error_message();
    EXPECT_NE(answer.status.error_message().find(says), std::string::npos) << answer.status.error_message();
  }

  std::vector<FmnistImage> images_;
  std::unique_ptr<inference::GRPCInferenceService::Stub> kserve_;
};

// A FP32 input tensor [1,1,28,28].
inference::ModelInferRequest tensor_request(const std::vector<float>& values, bool raw) {
  inference::ModelInferRequest request;
  request.set_model_name(kFmnistModel);
  auto* input = request.add_inputs();
  input->set_name("input");
  input->set_datatype("FP32");
  for (int64_t d : {1, 1, 28, 28}) input->add_shape(d);
  if (raw) {
    request.add_raw_input_contents(std::string(reinterpret_cast<const char*>(values.data()), values.size() * 4));
  } else {
    for (float v : values) input->mutable_contents()->add_fp32_contents(v);
  }
  return request;
}

TEST_F(KserveGrpcTest, HealthSaysLiveAndReady) {
  grpc::ClientContext live_context;
  inference::ServerLiveResponse live;
  ASSERT_TRUE(kserve_->ServerLive(&live_context, {}, &live).ok());
  EXPECT_TRUE(live.live());

  grpc::ClientContext ready_context;
  inference::ServerReadyResponse ready;
  ASSERT_TRUE(kserve_->ServerReady(&ready_context, {}, &ready).ok());
  EXPECT_TRUE(ready.ready());

  grpc::ClientContext model_context;
  inference::ModelReadyRequest model_request;
  model_request.set_name(kFmnistModel);
  inference::ModelReadyResponse model_ready;
  const grpc::Status status = kserve_->ModelReady(&model_context, model_request, &model_ready);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_TRUE(model_ready.ready());

  grpc::ClientContext unknown_context;
  model_request.set_name("no-such-model");
  EXPECT_EQ(kserve_->ModelReady(&unknown_context, model_request, &model_ready).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

TEST_F(KserveGrpcTest, MetadataDescribesServerAndModel) {
  grpc::ClientContext server_context;
  inference::ServerMetadataResponse server;
  ASSERT_TRUE(kserve_->ServerMetadata(&server_context, {}, &server).ok());
  EXPECT_EQ(server.name(), "tesserad");
  EXPECT_FALSE(server.version().empty());
  EXPECT_NE(std::find(server.extensions().begin(), server.extensions().end(), "classification"),
            server.extensions().end());

  grpc::ClientContext model_context;
  inference::ModelMetadataRequest request;
  request.set_name(kFmnistModel);
  inference::ModelMetadataResponse model;
  const grpc::Status status = kserve_->ModelMetadata(&model_context, request, &model);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(model.name(), kFmnistModel);
  ASSERT_EQ(model.versions_size(), 1);
  EXPECT_EQ(model.versions(0), "1");
  EXPECT_TRUE(model.platform().starts_with("tessera_")) << model.platform();
  ASSERT_EQ(model.inputs_size(), 1);
  EXPECT_EQ(model.inputs(0).datatype(), "FP32");
  EXPECT_EQ(std::vector<int64_t>(model.inputs(0).shape().begin(), model.inputs(0).shape().end()),
            (std::vector<int64_t>{1, 1, 28, 28}));
  ASSERT_EQ(model.outputs_size(), 1);
  EXPECT_EQ(model.outputs(0).datatype(), "FP32");
  EXPECT_EQ(std::vector<int64_t>(model.outputs(0).shape().begin(), model.outputs(0).shape().end()),
            (std::vector<int64_t>{1, 10}));

  grpc::ClientContext version_context;
  request.set_version("2");
  EXPECT_EQ(kserve_->ModelMetadata(&version_context, request, &model).error_code(), grpc::StatusCode::NOT_FOUND);
  grpc::ClientContext unknown_context;
  request.set_name("no-such-model");
  request.set_version("");
  EXPECT_EQ(kserve_->ModelMetadata(&unknown_context, request, &model).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(KserveGrpcTest, ImageTop1AgreesWithClassify) {
  for (size_t i = 0; i < 10; ++i) {
    for (const bool jpeg : {false, true}) {
      const std::string image = read_binary(jpeg ? images_[i].jpg : images_[i].png);
      const GrpcAnswer classify = classify_grpc(*stub_, image, kFmnistModel, 1);
      ASSERT_TRUE(classify.status.ok()) << classify.status.error_message();
      // bytes_contents for even images, raw_input_contents for odd ones.
      inference::ModelInferRequest request = bytes_request(image, i % 2 == 1);
      request.set_id("req-" + std::to_string(i));
      const KserveAnswer answer = kserve_infer(*kserve_, request);
      ASSERT_TRUE(answer.status.ok()) << answer.status.error_message();
      const inference::ModelInferResponse& r = answer.response;
      EXPECT_EQ(r.model_name(), kFmnistModel);
      EXPECT_EQ(r.id(), "req-" + std::to_string(i));
      ASSERT_EQ(r.outputs_size(), 1);
      EXPECT_EQ(r.outputs(0).name(), "probabilities");
      EXPECT_EQ(std::vector<int64_t>(r.outputs(0).shape().begin(), r.outputs(0).shape().end()),
                (std::vector<int64_t>{1, 10}));
      const std::vector<float> p = output_floats(r);
      ASSERT_EQ(p.size(), 10u);
      EXPECT_NEAR(std::accumulate(p.begin(), p.end(), 0.0), 1.0, 1e-3);
      const int top = argmax(p);
      EXPECT_EQ(fmnist_labels()[static_cast<size_t>(top)], classify.top1())
          << images_[i].stem << (jpeg ? ".jpg" : ".png");
      EXPECT_NEAR(p[static_cast<size_t>(top)], classify.response.classes(0).score(), 1e-6);
    }
  }
}

TEST_F(KserveGrpcTest, TensorInputsEqualTheImagePath) {
  for (size_t i = 0; i < 4; ++i) {
    const std::string png = read_binary(images_[i].png);
    const std::vector<float> from_image = probabilities(bytes_request(png));
    ASSERT_EQ(from_image.size(), 10u);

    const std::vector<float> tensor = preprocessed_input(png);
    ASSERT_EQ(tensor.size(), 28u * 28u);
    EXPECT_EQ(probabilities(tensor_request(tensor, false)), from_image) << images_[i].stem << " fp32_contents";
    EXPECT_EQ(probabilities(tensor_request(tensor, true)), from_image) << images_[i].stem << " raw FP32";

    // UINT8 pixels [1,H,W,1], preprocessed by the server like a decoded image.
    int width = 0;
    int height = 0;
    const std::vector<uint8_t> pixels = decoded_gray_pixels(png, &width, &height);
    inference::ModelInferRequest request;
    request.set_model_name(kFmnistModel);
    auto* input = request.add_inputs();
    input->set_name("input");
    input->set_datatype("UINT8");
    for (int64_t d : {1, height, width, 1}) input->add_shape(d);
    for (uint8_t v : pixels) input->mutable_contents()->add_uint_contents(v);
    EXPECT_EQ(probabilities(request), from_image) << images_[i].stem << " UINT8";
  }
}

TEST_F(KserveGrpcTest, ClassificationParameterAnswersTopKStrings) {
  const std::string png = read_binary(images_[0].png);
  const std::vector<float> p = probabilities(bytes_request(png));
  ASSERT_EQ(p.size(), 10u);

  inference::ModelInferRequest request = bytes_request(png);
  auto* output = request.add_outputs();
  output->set_name("probabilities");
  (*output->mutable_parameters())["classification"].set_int64_param(3);
  const KserveAnswer answer = kserve_infer(*kserve_, request);
  ASSERT_TRUE(answer.status.ok()) << answer.status.error_message();
  ASSERT_EQ(answer.response.outputs_size(), 1);
  const auto& tensor = answer.response.outputs(0);
  EXPECT_EQ(tensor.name(), "probabilities");
  EXPECT_EQ(tensor.datatype(), "BYTES");
  EXPECT_EQ(std::vector<int64_t>(tensor.shape().begin(), tensor.shape().end()), (std::vector<int64_t>{1, 3}));
  const std::vector<std::string> top = output_strings(answer.response);
  ASSERT_EQ(top.size(), 3u);

  std::vector<int> order(10);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return p[static_cast<size_t>(a)] > p[static_cast<size_t>(b)]; });
  for (size_t k = 0; k < 3; ++k) {
    // "score:index:label"
    const size_t first = top[k].find(':');
    const size_t second = top[k].find(':', first + 1);
    ASSERT_NE(second, std::string::npos) << top[k];
    const float score = std::stof(top[k].substr(0, first));
    const int index = std::stoi(top[k].substr(first + 1, second - first - 1));
    const std::string label = top[k].substr(second + 1);
    EXPECT_EQ(index, order[k]) << top[k];
    EXPECT_EQ(label, fmnist_labels()[static_cast<size_t>(order[k])]) << top[k];
    EXPECT_NEAR(score, p[static_cast<size_t>(order[k])], 1e-5) << top[k];
  }

  (*output->mutable_parameters())["classification"].set_int64_param(0);
  expect_code(request, grpc::StatusCode::INVALID_ARGUMENT, "classification");
}

TEST_F(KserveGrpcTest, UnknownModelOrVersionIsNotFound) {
  expect_code(bytes_request(read_binary(images_[0].png), false, "no-such-model"), grpc::StatusCode::NOT_FOUND,
              "no-such-model");
  inference::ModelInferRequest request = bytes_request(read_binary(images_[0].png));
  request.set_model_version("7");
  expect_code(request, grpc::StatusCode::NOT_FOUND, "version");
}

TEST_F(KserveGrpcTest, WrongDatatypeOrShapeIsInvalidArgument) {
  inference::ModelInferRequest request = tensor_request(std::vector<float>(28 * 28, 0.5f), false);
  request.mutable_inputs(0)->set_datatype("INT32");
  expect_code(request, grpc::StatusCode::INVALID_ARGUMENT, "datatype");

  request = tensor_request(std::vector<float>(28 * 28, 0.5f), false);
  request.mutable_inputs(0)->clear_shape();
  for (int64_t d : {1, 3, 28, 28}) request.mutable_inputs(0)->add_shape(d);
  expect_code(request, grpc::StatusCode::INVALID_ARGUMENT, "shape");

  // The shape is right but the data is short.
  expect_code(tensor_request(std::vector<float>(100, 0.5f), false), grpc::StatusCode::INVALID_ARGUMENT, "elements");

  request = bytes_request(read_binary(images_[0].png));
  request.mutable_inputs(0)->add_shape(2);  // [1,2]: two images
  expect_code(request, grpc::StatusCode::INVALID_ARGUMENT, "shape");

  request = bytes_request(read_binary(images_[0].png));
  request.add_outputs()->set_name("logits");
  expect_code(request, grpc::StatusCode::INVALID_ARGUMENT, "logits");

  request.Clear();
  request.set_model_name(kFmnistModel);
  expect_code(request, grpc::StatusCode::INVALID_ARGUMENT, "inputs");
}

TEST_F(KserveGrpcTest, CorruptOrEmptyImageIsInvalidArgument) {
  std::string jpeg = read_binary(images_[0].jpg);
  ASSERT_GT(jpeg.size(), 100u);
  jpeg.resize(jpeg.size() / 2);  // truncated: the magic is there, the scan is not
  expect_code(bytes_request(jpeg), grpc::StatusCode::INVALID_ARGUMENT, "");
  expect_code(bytes_request(jpeg, true), grpc::StatusCode::INVALID_ARGUMENT, "");
  expect_code(bytes_request("this is not an image at all"), grpc::StatusCode::INVALID_ARGUMENT, "JPEG or PNG");
  expect_code(bytes_request(""), grpc::StatusCode::INVALID_ARGUMENT, "empty");
  expect_code(bytes_request("", true), grpc::StatusCode::INVALID_ARGUMENT, "empty");

  // The daemon still serves after the bad requests.
  EXPECT_EQ(probabilities(bytes_request(read_binary(images_[0].png))).size(), 10u);
}

}  // namespace
}  // namespace tessera::testing
