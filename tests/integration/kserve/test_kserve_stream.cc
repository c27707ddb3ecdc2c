// gRPC ModelStreamInfer (tritonclient.grpc's start_stream / async_stream_infer) against the real
// daemon: every request on the stream gets one answer matched by its id — the response, or
// error_message for a bad request while the stream goes on — and a cancelled stream ends
// CANCELLED with the daemon still serving. In the concurrency list: it runs under TSan too.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "tests/integration/daemon_test.h"
#include "tests/integration/fmnist_images.h"
#include "tests/integration/kserve_client.h"

namespace tessera::testing {
namespace {

using inference::ModelInferRequest;
using inference::ModelStreamInferResponse;

class KserveStreamTest : public DaemonTest {
 protected:
  void SetUp() override {
    DaemonTest::SetUp();
    images_ = load_fmnist_images();
    ASSERT_GE(images_.size(), 6u) << "too few images in " << TESSERA_FMNIST_DIR;
    kserve_ = kserve_stub(*daemon_);
  }

  std::string image(size_t i) const { return read_binary(i % 2 ? images_[i].jpg : images_[i].png); }

  std::vector<FmnistImage> images_;
  std::unique_ptr<inference::GRPCInferenceService::Stub> kserve_;
};

TEST_F(KserveStreamTest, EachRequestGetsItsAnswerAndABadOneDoesNotEndTheStream) {
  std::vector<ModelInferRequest> requests;
  for (size_t i = 0; i < 6; ++i) {
    ModelInferRequest request = bytes_request(image(i), i % 2 == 1);
    request.set_id("s" + std::to_string(i));
    requests.push_back(std::move(request));
  }
  requests[2].mutable_inputs(0)->set_datatype("INT32");  // bad, in the middle
  requests[4].mutable_inputs(0)->set_shape(0, 2);        // a batch of two: this image and the next
  requests[4].mutable_inputs(0)->mutable_contents()->add_bytes_contents(image(5));

  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto stream = kserve_->ModelStreamInfer(&context);
  for (const ModelInferRequest& request : requests) ASSERT_TRUE(stream->Write(request));
  ASSERT_TRUE(stream->WritesDone());
  std::map<std::string, ModelStreamInferResponse> answers;
  ModelStreamInferResponse answer;
  for (int n = 0; n < 10 && stream->Read(&answer); ++n) answers[answer.infer_response().id()] = answer;
  const grpc::Status status = stream->Finish();
  EXPECT_TRUE(status.ok()) << status.error_message();

  ASSERT_EQ(answers.size(), requests.size());
  EXPECT_NE(answers["s2"].error_message().find("datatype"), std::string::npos) << answers["s2"].error_message();
  EXPECT_EQ(answers["s2"].infer_response().outputs_size(), 0);
  for (size_t i : {0, 1, 3, 4, 5}) {
    const std::string id = "s" + std::to_string(i);
    ASSERT_TRUE(answers[id].error_message().empty()) << id << ": " << answers[id].error_message();
    const KserveAnswer alone = kserve_infer(*kserve_, bytes_request(image(i)));
    ASSERT_TRUE(alone.status.ok()) << alone.status.error_message();
    std::vector<float> want = output_floats(alone.response);
    if (i == 4) {
      const KserveAnswer next = kserve_infer(*kserve_, bytes_request(image(5)));
      const std::vector<float> more = output_floats(next.response);
      want.insert(want.end(), more.begin(), more.end());
    }
    EXPECT_EQ(answers[id].infer_response().model_name(), kFmnistModel);
    EXPECT_EQ(output_floats(answers[id].infer_response()), want) << id;
  }
}

TEST_F(KserveStreamTest, CancelEndsTheStreamAndTheDaemonServesOn) {
  {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    auto stream = kserve_->ModelStreamInfer(&context);
    for (size_t i = 0; i < 20; ++i) {
      ModelInferRequest request = bytes_request(image(i % 6));
      request.set_id("c" + std::to_string(i));
      if (!stream->Write(request)) break;
    }
    ModelStreamInferResponse first;
    EXPECT_TRUE(stream->Read(&first));  // at least one is answered before the cancel
    context.TryCancel();
    ModelStreamInferResponse rest;
    for (int n = 0; n < 40 && stream->Read(&rest);) ++n;
    EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  // Unary and a new stream still work.
  EXPECT_TRUE(kserve_infer(*kserve_, bytes_request(image(0))).status.ok());
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto stream = kserve_->ModelStreamInfer(&context);
  ModelInferRequest request = bytes_request(image(1));
  request.set_id("after");
  ASSERT_TRUE(stream->Write(request));
  ASSERT_TRUE(stream->WritesDone());
  ModelStreamInferResponse answer;
  ASSERT_TRUE(stream->Read(&answer));
  EXPECT_EQ(answer.infer_response().id(), "after");
  EXPECT_TRUE(answer.error_message().empty()) << answer.error_message();
  EXPECT_TRUE(stream->Finish().ok());
}

}  // namespace
}  // namespace tessera::testing
