// The bad-input catalogue's fixture (test_bad_input_catalogue*.cc): one daemon per probe with
// small limits, so every probe is cheap, and the valid request each probe must be followed by.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/integration/daemon_test.h"
#include "tests/integration/fmnist_images.h"

namespace tessera::testing {

class BadInputCatalogue : public DaemonTest {
 protected:
  // Image bodies over 64 KiB are refused; a request must be read within 2 s.
  static constexpr int kMaxImageBytes = 65536;
  std::vector<std::string> extra_args() const override {
    return {"--max-image-bytes", std::to_string(kMaxImageBytes), "--http-read-timeout-s", "2"};
  }

  void SetUp() override {
    DaemonTest::SetUp();
    const std::vector<FmnistImage> images = load_fmnist_images();
    ASSERT_FALSE(images.empty()) << "no images in " << TESSERA_FMNIST_DIR;
    png_ = read_binary(images[0].png);
    jpeg_ = read_binary(images[0].jpg);
    label_ = images[0].label_name;
    http_ = std::make_unique<HttpClient>(daemon_->http_port());
  }

  // What follows every probe: the same daemon still classifies, over gRPC and over HTTP on a new
  // connection, and gives the image's answer.
  void expect_still_serves() {
    const GrpcAnswer grpc = classify_grpc(*stub_, png_);
    EXPECT_TRUE(grpc.status.ok()) << grpc.status.error_message();
    HttpClient fresh(daemon_->http_port());
    const HttpReply http = fresh.post("/v1/classify", jpeg_, "image/jpeg");
    EXPECT_EQ(http.status, 200) << http.error << http.body;
    EXPECT_EQ(grpc.top1(), label_);
  }

  // An HTTP answer with `status` whose body mentions `says`.
  static void expect_http(const HttpReply& reply, int status, const std::string& says) {
    EXPECT_EQ(reply.status, status) << reply.error << reply.body;
    EXPECT_NE(reply.body.find(says), std::string::npos) << "body lacks \"" << says << "\": " << reply.body;
  }

  // A gRPC Classify answer with `code` whose message mentions `says`.
  static void expect_grpc(const GrpcAnswer& answer, grpc::StatusCode code, const std::string& says) {
    EXPECT_EQ(answer.status.error_code(), code) << answer.status.error_message();
    EXPECT_NE(answer.status.error_message().find(says), std::string::npos) << answer.status.error_message();
  }

  // The image probes go through both classify doors: HTTP (400 and the message) and gRPC.
  void expect_image_refused(const std::string& image, const std::string& says, int http_status = 400,
                            grpc::StatusCode code = grpc::StatusCode::INVALID_ARGUMENT) {
    expect_http(http_->post("/v1/classify", image, "application/octet-stream"), http_status, says);
    expect_grpc(classify_grpc(*stub_, image), code, says);
  }

  std::string png_, jpeg_, label_;
  std::unique_ptr<HttpClient> http_;
};

}  // namespace tessera::testing
