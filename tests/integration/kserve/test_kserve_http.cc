// The KServe v2 REST API (/v2/...) against the real daemon with the project's HTTP client: health,
// metadata, JSON inference from base64 images and tensors, the classification extension, and
// errors as {"error": "..."} with their HTTP statuses.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <numeric>

#include "tests/integration/daemon_test.h"
#include "tests/integration/fmnist_images.h"
#include "tests/integration/kserve_client.h"

namespace tessera::testing {
namespace {

using nlohmann::json;
namespace http = boost::beast::http;

class KserveHttpTest : public DaemonTest {
 protected:
  void SetUp() override {
    DaemonTest::SetUp();
    images_ = load_fmnist_images();
    ASSERT_GE(images_.size(), 10u) << "too few images in " << TESSERA_FMNIST_DIR;
    client_ = std::make_unique<HttpClient>(daemon_->http_port());
  }

  // POSTs `body` to the inference endpoint and returns the parsed 200 answer (null on failure).
  json infer(const json& body, const std::string& target = kFmnistInferPath) {
    const HttpReply reply = client_->post(target, body.dump(), "application/json");
    EXPECT_EQ(reply.status, 200) << reply.error << reply.body;
    EXPECT_EQ(reply.header("content-type"), "application/json");
    if (reply.status != 200) return nullptr;
    return json::parse(reply.body);
  }

  // Asserts the KServe error form: the status, {"error": "<non-empty message mentioning says>"}.
  static void expect_error(const HttpReply& reply, int status, const std::string& says = "") {
    EXPECT_EQ(reply.status, status) << reply.error << reply.body;
    const json body = json::parse(reply.body, nullptr, false);
    ASSERT_FALSE(body.is_discarded()) << reply.body;
    ASSERT_TRUE(body.contains("error") && body["error"].is_string()) << reply.body;
    const std::string message = body["error"];
    EXPECT_FALSE(message.empty());
    EXPECT_NE(message.find(says), std::string::npos) << message;
  }

  std::vector<float> probabilities(const json& answer) {
    if (answer.is_null()) return {};
    EXPECT_EQ(answer["outputs"].size(), 1u) << answer.dump();
    EXPECT_EQ(answer["outputs"][0]["datatype"], "FP32");
    return answer["outputs"][0]["data"].get<std::vector<float>>();
  }

  std::vector<FmnistImage> images_;
  std::unique_ptr<HttpClient> client_;
};

json image_body(const std::string& image) {
  return {{"inputs", {{{"name", "image"}, {"datatype", "BYTES"}, {"shape", {1}}, {"data", {base64(image)}}}}}};
}

json tensor_body(const std::vector<float>& values) {
  return {{"inputs", {{{"name", "input"}, {"datatype", "FP32"}, {"shape", {1, 1, 28, 28}}, {"data", values}}}}};
}

TEST_F(KserveHttpTest, HealthAndMetadata) {
  HttpReply reply = client_->get("/v2/health/live");
  EXPECT_EQ(reply.status, 200) << reply.body;
  reply = client_->get("/v2/health/ready");
  EXPECT_EQ(reply.status, 200) << reply.body;
  reply = client_->get("/v2/models/fashion-mnist/ready");
  EXPECT_EQ(reply.status, 200) << reply.body;
  reply = client_->get("/v2/models/fashion-mnist/versions/1/ready");
  EXPECT_EQ(reply.status, 200) << reply.body;

  reply = client_->get("/v2");
  ASSERT_EQ(reply.status, 200) << reply.body;
  json body = json::parse(reply.body);
  EXPECT_EQ(body["name"], "tesserad");
  EXPECT_FALSE(body["version"].get<std::string>().empty());
  EXPECT_EQ(body["extensions"],
            json({"classification", "model_repository", "model_configuration", "statistics", "binary_tensor_data"}));

  for (const std::string target : {"/v2/models/fashion-mnist", "/v2/models/fashion-mnist/versions/1"}) {
    reply = client_->get(target);
    ASSERT_EQ(reply.status, 200) << target << " " << reply.body;
    body = json::parse(reply.body);
    EXPECT_EQ(body["name"], "fashion-mnist");
    EXPECT_EQ(body["versions"], json({"1"}));
    EXPECT_EQ(body["inputs"][0]["datatype"], "FP32");
    EXPECT_EQ(body["inputs"][0]["shape"], json({1, 1, 28, 28}));
    EXPECT_EQ(body["outputs"][0]["name"], "probabilities");
    EXPECT_EQ(body["outputs"][0]["shape"], json({1, 10}));
  }

  reply = client_->request(http::verb::head, "/v2/health/ready");
  EXPECT_EQ(reply.status, 200);
  EXPECT_TRUE(reply.body.empty());
}

TEST_F(KserveHttpTest, UnknownModelsVersionsAndPathsAre404) {
  expect_error(client_->get("/v2/models/no-such-model"), 404, "no-such-model");
  expect_error(client_->get("/v2/models/no-such-model/ready"), 404, "no-such-model");
  expect_error(client_->get("/v2/models/fashion-mnist/versions/2"), 404, "version");
  expect_error(client_->post("/v2/models/no-such-model/infer", image_body(read_binary(images_[0].png)).dump(),
                             "application/json"),
               404, "no-such-model");
  expect_error(client_->get("/v2/models/fashion-mnist/trace/setting"), 404);  // no trace extension
  expect_error(client_->get("/v2/nothing"), 404);
  const HttpReply wrong_method = client_->get(kFmnistInferPath);
  expect_error(wrong_method, 405);
  EXPECT_EQ(wrong_method.header("allow"), "POST");
}

TEST_F(KserveHttpTest, Base64ImageTop1AgreesWithClassify) {
  for (size_t i = 0; i < 10; ++i) {
    const std::string image = read_binary(i % 2 ? images_[i].jpg : images_[i].png);
    const GrpcAnswer classify = classify_grpc(*stub_, image, kFmnistModel, 1);
    ASSERT_TRUE(classify.status.ok()) << classify.status.error_message();
    json body = image_body(image);
    body["id"] = "http-" + std::to_string(i);
    const json answer = infer(body, i % 3 == 0 ? "/v2/models/fashion-mnist/versions/1/infer" : kFmnistInferPath);
    ASSERT_FALSE(answer.is_null());
    EXPECT_EQ(answer["model_name"], "fashion-mnist");
    EXPECT_EQ(answer["id"], "http-" + std::to_string(i));
    EXPECT_EQ(answer["outputs"][0]["name"], "probabilities");
    EXPECT_EQ(answer["outputs"][0]["shape"], json({1, 10}));
    const std::vector<float> p = probabilities(answer);
    ASSERT_EQ(p.size(), 10u);
    EXPECT_NEAR(std::accumulate(p.begin(), p.end(), 0.0), 1.0, 1e-3);
    const int top = argmax(p);
    EXPECT_EQ(fmnist_labels()[static_cast<size_t>(top)], classify.top1()) << images_[i].stem;
    EXPECT_NEAR(p[static_cast<size_t>(top)], classify.response.classes(0).score(), 1e-6);
  }
}

TEST_F(KserveHttpTest, Fp32TensorEqualsTheImagePathAndGrpc) {
  const std::string png = read_binary(images_[2].png);
  const std::vector<float> from_image = probabilities(infer(image_body(png)));
  ASSERT_EQ(from_image.size(), 10u);
  const std::vector<float> from_tensor = probabilities(infer(tensor_body(preprocessed_input(png))));
  ASSERT_EQ(from_tensor.size(), 10u);
  for (size_t i = 0; i < 10; ++i) EXPECT_FLOAT_EQ(from_tensor[i], from_image[i]) << i;
  // JSON carries the shortest text that reads back as the same float: equal to gRPC's raw bytes.
  auto stub = kserve_stub(*daemon_);
  const KserveAnswer grpc_answer = kserve_infer(*stub, bytes_request(png));
  ASSERT_TRUE(grpc_answer.status.ok()) << grpc_answer.status.error_message();
  EXPECT_EQ(output_floats(grpc_answer.response), from_image);
}

TEST_F(KserveHttpTest, ClassificationParameterAnswersTopKStrings) {
  const std::string png = read_binary(images_[3].png);
  const std::vector<float> p = probabilities(infer(image_body(png)));
  ASSERT_EQ(p.size(), 10u);
  json body = image_body(png);
  body["outputs"] = {{{"name", "probabilities"}, {"parameters", {{"classification", 2}}}}};
  const json answer = infer(body);
  ASSERT_FALSE(answer.is_null());
  const json& out = answer["outputs"][0];
  EXPECT_EQ(out["datatype"], "BYTES");
  EXPECT_EQ(out["shape"], json({1, 2}));
  ASSERT_EQ(out["data"].size(), 2u);
  const int top = argmax(p);
  const std::string first = out["data"][0];
  EXPECT_EQ(first.substr(first.find(':')), ":" + std::to_string(top) + ":" + fmnist_labels()[static_cast<size_t>(top)]);
  EXPECT_NEAR(std::stof(first.substr(0, first.find(':'))), p[static_cast<size_t>(top)], 1e-5);
}

TEST_F(KserveHttpTest, BadRequestsAre400WithAnErrorMessage) {
  const std::string png = read_binary(images_[0].png);
  expect_error(client_->post(kFmnistInferPath, "{not json", "application/json"), 400, "JSON");

  json body = image_body(png);
  body["inputs"][0]["datatype"] = "INT64";
  expect_error(client_->post(kFmnistInferPath, body.dump(), "application/json"), 400, "datatype");

  body = tensor_body(std::vector<float>(28 * 28, 0.0f));
  body["inputs"][0]["shape"] = {1, 28, 28, 1};
  expect_error(client_->post(kFmnistInferPath, body.dump(), "application/json"), 400, "shape");
  expect_error(client_->post(kFmnistInferPath, tensor_body(std::vector<float>(10, 0.0f)).dump(), "application/json"),
               400, "elements");

  std::string jpeg = read_binary(images_[0].jpg);
  jpeg.resize(jpeg.size() / 2);
  expect_error(client_->post(kFmnistInferPath, image_body(jpeg).dump(), "application/json"), 400);
  expect_error(client_->post(kFmnistInferPath, image_body("").dump(), "application/json"), 400, "empty");
  body = image_body(png);
  body["inputs"][0]["data"] = {"***not base64***"};
  expect_error(client_->post(kFmnistInferPath, body.dump(), "application/json"), 400, "base64");
  expect_error(client_->post(kFmnistInferPath, json({{"inputs", json::array()}}).dump(), "application/json"), 400,
               "inputs");

  // Still serving, on the same connection.
  EXPECT_EQ(probabilities(infer(image_body(png))).size(), 10u);
}

}  // namespace
}  // namespace tessera::testing
