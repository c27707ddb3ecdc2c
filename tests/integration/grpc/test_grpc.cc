// tessera.v1.Classifier over gRPC against the real daemon.
#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <sstream>
#include <thread>

#include "tests/integration/daemon_test.h"
#include "tests/integration/fmnist_images.h"
#include "tests/integration/metrics_text.h"

namespace tessera::testing {
namespace {

class GrpcTest : public DaemonTest {
 protected:
  void SetUp() override {
    DaemonTest::SetUp();
    images_ = load_fmnist_images();
    ASSERT_FALSE(images_.empty()) << "no images in " << TESSERA_FMNIST_DIR
                                  << " (the make_fmnist_images fixture writes them)";
  }
  std::vector<FmnistImage> images_;
};

TEST_F(GrpcTest, ListModelsDescribesTheBundledModel) {
  v1::ListModelsResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  const grpc::Status status = stub_->ListModels(&context, v1::ListModelsRequest(), &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.models_size(), 1);
  const v1::ModelInfo& model = response.models(0);
  EXPECT_EQ(model.name(), "fashion-mnist");
  EXPECT_EQ(daemon_->models(), "fashion-mnist");
  EXPECT_EQ(model.format(), "onnx");
  EXPECT_EQ(model.input_width(), 28u);
  EXPECT_EQ(model.input_height(), 28u);
  EXPECT_EQ(model.input_channels(), 1u);
  EXPECT_FALSE(model.precision().empty());
  EXPECT_FALSE(model.device().empty());
  ASSERT_EQ(model.labels_size(), 10);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(model.labels(i), fmnist_labels()[static_cast<size_t>(i)]);
  // int8 (the default): where its multiply-adds run; HTTP's /v1/models says the same.
  ASSERT_EQ(model.precision(), "int8");
  ASSERT_TRUE(model.has_placement());
  EXPECT_GT(model.placement().fabric_mac_share(), 0.5);
  EXPECT_LE(model.placement().fabric_mac_share(), 1.0);
  EXPECT_GE(model.placement().fabric_segments(), 1u);
  EXPECT_EQ(model.placement().summary().rfind("fabric ", 0), 0u) << model.placement().summary();
}

TEST_F(GrpcTest, ClassifyAnswersScoresLabelsAndTiming) {
  const GrpcAnswer answer = classify_grpc(*stub_, read_binary(images_[0].png), "fashion-mnist", 3);
  ASSERT_TRUE(answer.status.ok()) << answer.status.error_message();
  const v1::ClassifyResponse& r = answer.response;
  EXPECT_EQ(r.model(), "fashion-mnist");
  EXPECT_FALSE(r.request_id().empty());
  ASSERT_EQ(r.classes_size(), 3);
  float sum = 0;
  for (int i = 0; i < r.classes_size(); ++i) {
    const v1::Class& c = r.classes(i);
    ASSERT_LT(c.index(), 10u);
    EXPECT_EQ(c.label(), fmnist_labels()[c.index()]);
    EXPECT_GE(c.score(), 0.0f);
    EXPECT_LE(c.score(), 1.0f);
    if (i > 0) {
      EXPECT_GE(r.classes(i - 1).score(), c.score());
    }
    sum += c.score();
  }
  EXPECT_LE(sum, 1.0001f);
  EXPECT_GT(r.timing().total_us(), 0u);
  EXPECT_GE(r.timing().total_us(), r.timing().inference_us());
  EXPECT_GE(r.timing().total_us(), r.timing().decode_us());
}

TEST_F(GrpcTest, TopKDefaultsToFiveAndClampsToTheClasses) {
  const std::string image = read_binary(images_[0].png);
  const GrpcAnswer by_default = classify_grpc(*stub_, image, "", 0);
  ASSERT_TRUE(by_default.status.ok()) << by_default.status.error_message();
  EXPECT_EQ(by_default.response.classes_size(), 5);
  const GrpcAnswer all = classify_grpc(*stub_, image, "", 1000);
  ASSERT_TRUE(all.status.ok()) << all.status.error_message();
  EXPECT_EQ(all.response.classes_size(), 10);
  float sum = 0;
  for (const v1::Class& c : all.response.classes()) sum += c.score();
  EXPECT_NEAR(sum, 1.0f, 1e-3f);
}

TEST_F(GrpcTest, EchoesTheCallersRequestId) {
  const GrpcAnswer answer = classify_grpc(*stub_, read_binary(images_[0].png), "", 1, "my-request-42");
  ASSERT_TRUE(answer.status.ok()) << answer.status.error_message();
  EXPECT_EQ(answer.response.request_id(), "my-request-42");
  const GrpcAnswer bad = classify_grpc(*stub_, read_binary(images_[0].png), "", 1, "has space");
  EXPECT_EQ(bad.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(GrpcTest, CorruptImageIsInvalidArgument) {
  std::string png = read_binary(images_[0].png);
  png.resize(png.size() / 2);  // truncated PNG
  const GrpcAnswer truncated = classify_grpc(*stub_, png);
  EXPECT_EQ(truncated.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_FALSE(truncated.status.error_message().empty());
  const GrpcAnswer not_an_image = classify_grpc(*stub_, "this is not an image at all");
  EXPECT_EQ(not_an_image.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_FALSE(not_an_image.status.error_message().empty());
}

TEST_F(GrpcTest, EmptyImageIsInvalidArgument) {
  const GrpcAnswer answer = classify_grpc(*stub_, "");
  EXPECT_EQ(answer.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(answer.status.error_message().find("empty"), std::string::npos) << answer.status.error_message();
}

TEST_F(GrpcTest, UnknownModelIsNotFound) {
  const GrpcAnswer answer = classify_grpc(*stub_, read_binary(images_[0].png), "no-such-model");
  EXPECT_EQ(answer.status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(answer.status.error_message().find("no-such-model"), std::string::npos);
}

// `threads` threads call Classify `calls` times each with `image`: every call is OK with the
// top-1 a single call gets.
void expect_concurrent_calls_agree(v1::Classifier::Stub& stub, const std::string& image, int threads, int calls) {
  const std::string expected = classify_grpc(stub, image).top1();
  ASSERT_FALSE(expected.empty());
  std::atomic<int> ok{0};
  std::atomic<int> mismatched{0};
  std::vector<std::thread> workers;
  workers.reserve(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      for (int i = 0; i < calls; ++i) {
        const GrpcAnswer a = classify_grpc(stub, image);
        if (a.status.ok()) ++ok;
        if (a.top1() != expected) ++mismatched;
      }
    });
  }
  for (auto& w : workers) w.join();
  EXPECT_EQ(ok.load(), threads * calls);
  EXPECT_EQ(mismatched.load(), 0);
}

TEST_F(GrpcTest, ConcurrentCallsAllSucceedAndAgree) {
  expect_concurrent_calls_agree(*stub_, read_binary(images_[1].png), 8, 6);
}

// A latency daemon (--max-queue-delay-us 0) runs an idle request's batch on the gRPC thread that
// received it (InferenceQueue's inline path): every call of a closed loop is answered, alone in
// its batch, with the result a queued one gets, and the metrics count each one as usual.
class GrpcLatencyDaemonTest : public GrpcTest {
 protected:
  std::vector<std::string> extra_args() const override { return {"--max-queue-delay-us", "0"}; }
};

TEST_F(GrpcLatencyDaemonTest, ACallAtATimeIsAnsweredAloneAndCounted) {
  constexpr int kCalls = 20;
  for (int i = 0; i < kCalls; ++i) {
    const FmnistImage& image = images_[static_cast<size_t>(i) % images_.size()];
    const GrpcAnswer a = classify_grpc(*stub_, read_binary(image.png), "", 1, "latency-" + std::to_string(i));
    ASSERT_TRUE(a.status.ok()) << a.status.error_message();
    EXPECT_EQ(a.response.request_id(), "latency-" + std::to_string(i));
    EXPECT_EQ(a.response.timing().batch_size(), 1u);
    EXPECT_GE(a.response.timing().total_us(), a.response.timing().inference_us());
  }
  // A bad image is still refused by the decode, on the same path.
  const GrpcAnswer bad = classify_grpc(*stub_, "not an image");
  EXPECT_EQ(bad.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  HttpClient http(daemon_->http_port());
  const HttpReply reply = http.get("/metrics");
  ASSERT_EQ(reply.status, 200) << reply.error;
  EXPECT_EQ(sample_value(reply.body, "tessera_requests_total{api=\"grpc\",code=\"OK\",model=\"fashion-mnist\"}"),
            double{kCalls});
  EXPECT_EQ(sample_value(reply.body, "tessera_batch_size_sum{model=\"fashion-mnist\"}"), double{kCalls});
  EXPECT_EQ(sample_value(reply.body, "tessera_queue_depth{model=\"fashion-mnist\"}"), 0.0);
}

// Concurrent callers on a latency daemon: some run inline, the rest queue for the workers; all
// are answered with the same top-1.
TEST_F(GrpcLatencyDaemonTest, ConcurrentCallsMixInlineAndQueuedRunsAndAllAgree) {
  expect_concurrent_calls_agree(*stub_, read_binary(images_[2].png), 8, 10);
}

}  // namespace
}  // namespace tessera::testing
