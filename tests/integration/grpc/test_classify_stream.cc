// tessera.v1.Classifier/ClassifyStream against the real daemon: every request of a stream is
// answered once with its request id and the unary call's top-1; a bad request gets an error
// answer and the stream goes on; cancelling a stream ends it.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <thread>

#include "tests/integration/daemon_test.h"
#include "tests/integration/fmnist_images.h"

namespace tessera::testing {
namespace {

class ClassifyStreamTest : public DaemonTest {
 protected:
  void SetUp() override {
    DaemonTest::SetUp();
    images_ = load_fmnist_images();
    ASSERT_GE(images_.size(), 40u) << "the make_fmnist_images fixture writes them";
  }
  std::vector<FmnistImage> images_;
};

TEST_F(ClassifyStreamTest, AnswersEveryRequestWithItsIdAndTheUnaryResult) {
  constexpr int kRequests = 40;  // more than one stream may have pending at once (32)
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  auto stream = stub_->ClassifyStream(&context);
  std::map<std::string, std::string> expected;  // request id -> unary top-1
  // The writer runs beside the reader, as a camera would.
  std::thread writer([&] {
    for (int i = 0; i < kRequests; ++i) {
      v1::ClassifyRequest request;
      request.set_image(read_binary(images_[i].png));
      request.set_request_id("frame-" + std::to_string(i));
      request.set_top_k(3);
      if (!stream->Write(request)) break;
    }
    stream->WritesDone();
  });
  for (int i = 0; i < kRequests; ++i) {
    expected["frame-" + std::to_string(i)] = classify_grpc(*stub_, read_binary(images_[i].png)).top1();
  }
  std::set<std::string> seen;
  v1::ClassifyResponse response;
  while (stream->Read(&response)) {
    EXPECT_TRUE(response.error().empty()) << response.error();
    EXPECT_TRUE(seen.insert(response.request_id()).second) << "answered twice: " << response.request_id();
    ASSERT_EQ(response.classes_size(), 3);
    EXPECT_EQ(response.classes(0).label(), expected[response.request_id()]) << response.request_id();
    EXPECT_GE(response.timing().batch_size(), 1u);
  }
  writer.join();
  const grpc::Status status = stream->Finish();
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(seen.size(), size_t{kRequests});
}

TEST_F(ClassifyStreamTest, ABadRequestGetsAnErrorAnswerAndTheStreamGoesOn) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto stream = stub_->ClassifyStream(&context);
  v1::ClassifyRequest good, corrupt, unknown;
  good.set_image(read_binary(images_[0].png));
  good.set_request_id("good");
  corrupt.set_image("\xff\xd8\xff not really a jpeg");
  corrupt.set_request_id("corrupt");
  unknown.set_image(good.image());
  unknown.set_model("no-such-model");
  unknown.set_request_id("unknown");
  ASSERT_TRUE(stream->Write(corrupt));
  ASSERT_TRUE(stream->Write(unknown));
  ASSERT_TRUE(stream->Write(good));
  stream->WritesDone();
  std::map<std::string, v1::ClassifyResponse> got;
  v1::ClassifyResponse response;
  while (stream->Read(&response)) got[response.request_id()] = response;
  EXPECT_TRUE(stream->Finish().ok());
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got["corrupt"].error_code(), uint32_t(grpc::StatusCode::INVALID_ARGUMENT)) << got["corrupt"].error();
  EXPECT_FALSE(got["corrupt"].error().empty());
  EXPECT_EQ(got["unknown"].error_code(), uint32_t(grpc::StatusCode::NOT_FOUND));
  EXPECT_TRUE(got["good"].error().empty());
  EXPECT_EQ(got["good"].classes(0).label(), images_[0].label_name);
}

TEST_F(ClassifyStreamTest, CancelledStreamEndsAndTheDaemonStopsCleanly) {
  auto context = std::make_unique<grpc::ClientContext>();
  auto stream = stub_->ClassifyStream(context.get());
  v1::ClassifyRequest request;
  request.set_image(read_binary(images_[0].png));
  ASSERT_TRUE(stream->Write(request));
  v1::ClassifyResponse response;
  ASSERT_TRUE(stream->Read(&response));
  context->TryCancel();
  while (stream->Read(&response)) {}
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
  // The unary path still works, and no stream is left to hold the drain.
  EXPECT_TRUE(classify_grpc(*stub_, request.image()).status.ok());
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(daemon_->stop(SIGTERM), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

}  // namespace
}  // namespace tessera::testing
