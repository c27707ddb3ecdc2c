// Shared by the integration tests: a fixture running one tesserad per test, and small helpers
// for classifying over gRPC and HTTP.
#pragma once

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "tests/integration/http_client.h"
#include "tests/integration/tesserad_process.h"

namespace tessera::testing {

// Starts tesserad (with extra_args()) before each test; prints its log when the test failed.
class DaemonTest : public ::testing::Test {
 protected:
  virtual std::vector<std::string> extra_args() const { return {}; }

  void SetUp() override {
    daemon_ = std::make_unique<TesseradProcess>(extra_args());
    ASSERT_TRUE(daemon_->ok()) << daemon_->error();
    stub_ = daemon_->stub();
  }

  void TearDown() override {
    if (HasFailure() && daemon_) std::cerr << "---- tesserad log ----\n" << daemon_->log() << "----\n";
  }

  std::unique_ptr<TesseradProcess> daemon_;
  std::unique_ptr<v1::Classifier::Stub> stub_;
};

struct GrpcAnswer {
  grpc::Status status;
  v1::ClassifyResponse response;
  std::string top1() const { return response.classes_size() ? response.classes(0).label() : ""; }
};

// One Classify call with a 20 s deadline.
inline GrpcAnswer classify_grpc(v1::Classifier::Stub& stub, const std::string& image, const std::string& model = "",
                                uint32_t top_k = 0, const std::string& request_id = "") {
  v1::ClassifyRequest request;
  request.set_model(model);
  request.set_image(image);
  request.set_top_k(top_k);
  request.set_request_id(request_id);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  GrpcAnswer answer;
  answer.status = stub.Classify(&context, request, &answer.response);
  return answer;
}

}  // namespace tessera::testing
