// Real Fashion-MNIST test images through both front doors, as PNG and as JPEG: gRPC and HTTP
// agree with each other, JPEG agrees with PNG, and the model gets most of them right.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/daemon_test.h"
#include "tests/integration/fmnist_images.h"

namespace tessera::testing {
namespace {

using ClassificationTest = DaemonTest;

struct HttpAnswer {
  std::string top1;
  float top1_score = 0;
  std::string error;
};

HttpAnswer classify_http(HttpClient& client, const std::string& image, const std::string& content_type) {
  HttpAnswer answer;
  const HttpReply reply = client.post("/v1/classify?top_k=5", image, content_type);
  if (reply.status != 200) {
    answer.error = "HTTP " + std::to_string(reply.status) + " " + reply.error + " " + reply.body;
    return answer;
  }
  const auto body = nlohmann::json::parse(reply.body);
  answer.top1 = body.at("classes").at(0).at("label").get<std::string>();
  answer.top1_score = body.at("classes").at(0).at("score").get<float>();
  return answer;
}

TEST_F(ClassificationTest, GrpcAndHttpAgreeOnPngAndJpegAndMostAreRight) {
  const std::vector<FmnistImage> images = load_fmnist_images();
  ASSERT_EQ(images.size(), 50u) << "expected the 50 images of the make_fmnist_images fixture in " << TESSERA_FMNIST_DIR;
  HttpClient http(daemon_->http_port());
  int right_png = 0;
  int right_jpg = 0;
  for (const FmnistImage& image : images) {
    SCOPED_TRACE(image.stem + " (" + image.label_name + ")");
    const std::string png = read_binary(image.png);
    const std::string jpg = read_binary(image.jpg);
    ASSERT_FALSE(png.empty());
    ASSERT_FALSE(jpg.empty());

    const GrpcAnswer grpc_png = classify_grpc(*stub_, png);
    const GrpcAnswer grpc_jpg = classify_grpc(*stub_, jpg);
    ASSERT_TRUE(grpc_png.status.ok()) << grpc_png.status.error_message();
    ASSERT_TRUE(grpc_jpg.status.ok()) << grpc_jpg.status.error_message();
    const HttpAnswer http_png = classify_http(http, png, "image/png");
    const HttpAnswer http_jpg = classify_http(http, jpg, "image/jpeg");
    ASSERT_TRUE(http_png.error.empty()) << http_png.error;
    ASSERT_TRUE(http_jpg.error.empty()) << http_jpg.error;

    // Same bytes, same model: the two front doors answer identically.
    EXPECT_EQ(grpc_png.top1(), http_png.top1);
    EXPECT_NEAR(grpc_png.response.classes(0).score(), http_png.top1_score, 1e-6);
    EXPECT_EQ(grpc_jpg.top1(), http_jpg.top1);
    // JPEG at quality 95 keeps the answer of the lossless PNG.
    EXPECT_EQ(grpc_jpg.top1(), grpc_png.top1());

    right_png += grpc_png.top1() == image.label_name;
    right_jpg += grpc_jpg.top1() == image.label_name;
  }
  // The model is ~91% accurate on the test set.
  EXPECT_GE(right_png, 40) << "of 50 PNG images";
  EXPECT_GE(right_jpg, 40) << "of 50 JPEG images";
  std::cout << "top-1 right: " << right_png << "/50 PNG, " << right_jpg << "/50 JPEG\n";
}

}  // namespace
}  // namespace tessera::testing
