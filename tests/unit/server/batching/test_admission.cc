// The admission step every classify door goes through: each refusal kind is the right Status,
// in the documented order, and an admitted request is the job its door asked for, holding an
// in-flight slot until it is answered; a request of several images is admitted as one group,
// answered once and in order.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "accel/runtime/engine.h"
#include "accel/runtime/model_config.h"
#include "server/batching/admission.h"
#include "server/batching/inference_queue.h"
#include "server/batching/input_stage.h"
#include "server/batching/request_id.h"
#include "server/models/model_repository.h"

namespace tessera {
namespace {

constexpr int64_t kMaxImageBytes = 64;

class AdmissionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto config = load_model_config(std::filesystem::path(TESSERA_SOURCE_DIR) / "models/fashion-mnist");
    ASSERT_TRUE(config.is_ok()) << config.status().to_string();
    auto engine = Engine::load(*config);
    ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
    auto model = std::make_unique<ServedModel>();
    model->engine = std::move(engine).value();
    std::vector<std::unique_ptr<ServedModel>> models;
    models.push_back(std::move(model));
    models_ = std::make_unique<ModelRepository>(std::move(models));
    InferenceQueueOptions options;
    options.workers = 1;
    queue_ = std::make_unique<InferenceQueue>(options);
    admission_ = std::make_unique<Admission>(*models_, *queue_, in_flight_, DecodeLimits{.max_bytes = kMaxImageBytes});
  }

  // A request every check lets through.
  AdmissionRequest good_request() {
    AdmissionRequest request;
    request.via = "grpc";
    request.model = "fashion-mnist";
    request.request_id = "caller-7";
    request.top_k = uint64_t{3};
    request.input = JobInput{EncodedImage{{bytes_.data(), bytes_.size()}}};
    request.bytes = bytes_.size();
    return request;
  }

  const std::vector<uint8_t> bytes_ = std::vector<uint8_t>(16, 0x42);
  std::unique_ptr<ModelRepository> models_;
  InFlightTracker in_flight_;
  std::unique_ptr<InferenceQueue> queue_;
  std::unique_ptr<Admission> admission_;
};

TEST_F(AdmissionTest, AdmitsAGoodRequestAsItsJobWithASlot) {
  AdmissionRequest request = good_request();
  const auto deadline = SteadyClock::now() + std::chrono::seconds(5);
  request.deadline = deadline;
  request.cancelled = [] { return false; };
  {
    Admitted admitted = admission_->admit(std::move(request));
    ASSERT_TRUE(admitted) << admitted.status().to_string();
    EXPECT_EQ(admitted.request_id(), "caller-7");
    EXPECT_EQ(admitted->model, models_->default_model());
    EXPECT_EQ(admitted->top_k, 3);
    EXPECT_EQ(admitted->request_id, "caller-7");
    EXPECT_STREQ(admitted->via, "grpc");
    EXPECT_EQ(admitted->deadline, deadline);
    ASSERT_TRUE(admitted->cancelled);
    ASSERT_TRUE(std::holds_alternative<EncodedImage>(admitted->input));
    EXPECT_EQ(std::get<EncodedImage>(admitted->input).bytes.data(), bytes_.data());
    EXPECT_EQ(in_flight_.running(), 1);
  }
  EXPECT_EQ(in_flight_.running(), 0) << "an admitted job never submitted gives its slot back";
}

TEST_F(AdmissionTest, TopKZeroIsTheDefaultAndTooManyIsTheModelsClasses) {
  AdmissionRequest request = good_request();
  request.top_k = uint64_t{0};
  Admitted by_default = admission_->admit(std::move(request));
  ASSERT_TRUE(by_default);
  EXPECT_EQ(by_default->top_k, kDefaultTopK);

  request = good_request();
  request.top_k = uint64_t{1000};
  Admitted capped = admission_->admit(std::move(request));
  ASSERT_TRUE(capped);
  EXPECT_EQ(capped->top_k, models_->default_model()->num_classes());
}

TEST_F(AdmissionTest, NoModelNameIsTheDefaultModel) {
  AdmissionRequest request = good_request();
  request.model = "";
  Admitted admitted = admission_->admit(std::move(request));
  ASSERT_TRUE(admitted);
  EXPECT_EQ(admitted->model, models_->default_model());
}

TEST_F(AdmissionTest, AVersionTheDoorResolvedIsRunAsItIs) {
  // The KServe doors decode against one version and hand it over: admission does not look the
  // name up again (a load may have swapped versions since), so the job runs on that version.
  AdmissionRequest request = good_request();
  request.model = "swapped-out-meanwhile";
  request.resolved = models_->default_model();
  Admitted admitted = admission_->admit(std::move(request));
  ASSERT_TRUE(admitted) << admitted.status().to_string();
  EXPECT_EQ(admitted->model, models_->default_model());
}

TEST_F(AdmissionTest, NoIdGetsAFreshOne) {
  AdmissionRequest request = good_request();
  request.request_id = "";
  Admitted admitted = admission_->admit(std::move(request));
  ASSERT_TRUE(admitted);
  EXPECT_TRUE(is_valid_request_id(admitted.request_id()));
  EXPECT_EQ(admitted->request_id, admitted.request_id());
}

TEST_F(AdmissionTest, AnUnusableIdIsRefusedOrReplacedAsTheRuleSays) {
  AdmissionRequest request = good_request();
  request.request_id = "has a space";
  request.id_name = "X-Request-Id";
  Admitted refused = admission_->admit(std::move(request));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.status().message(), "X-Request-Id must be 1..128 printable characters without spaces");
  EXPECT_TRUE(is_valid_request_id(refused.request_id())) << "the refusal goes by a fresh id";
  EXPECT_EQ(in_flight_.running(), 0);

  request = good_request();
  request.request_id = "has a space";
  request.id_rule = RequestIdRule::kReplace;
  Admitted replaced = admission_->admit(std::move(request));
  ASSERT_TRUE(replaced) << replaced.status().to_string();
  EXPECT_NE(replaced.request_id(), "has a space");
  EXPECT_TRUE(is_valid_request_id(replaced.request_id()));
}

TEST_F(AdmissionTest, AnUnknownModelIsNotFound) {
  AdmissionRequest request = good_request();
  request.model = "nope";
  Admitted refused = admission_->admit(std::move(request));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(refused.status().message(), "no model named 'nope'");
  EXPECT_EQ(refused.request_id(), "caller-7");
}

TEST_F(AdmissionTest, WhatTheDoorCouldNotReadIsRefusedAfterTheModel) {
  AdmissionRequest request = good_request();
  request.top_k = Status::invalid_argument("top_k must be a non-negative integer, not 'x'");
  Admitted bad_top_k = admission_->admit(std::move(request));
  ASSERT_FALSE(bad_top_k);
  EXPECT_EQ(bad_top_k.status().message(), "top_k must be a non-negative integer, not 'x'");

  request = good_request();
  request.input = Status::invalid_argument("no closing delimiter");
  Admitted bad_input = admission_->admit(std::move(request));
  ASSERT_FALSE(bad_input);
  EXPECT_EQ(bad_input.status().message(), "no closing delimiter");

  request = good_request();
  request.model = "nope";
  request.top_k = Status::invalid_argument("bad top_k");
  Admitted both = admission_->admit(std::move(request));
  EXPECT_EQ(both.status().code(), StatusCode::kNotFound) << "the model is checked first";
}

TEST_F(AdmissionTest, AnEmptyOrOversizedImageIsInvalid) {
  AdmissionRequest request = good_request();
  request.input = JobInput{EncodedImage{}};
  Admitted empty = admission_->admit(std::move(request));
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(empty.status().message(), "image is empty");

  const std::vector<uint8_t> big(kMaxImageBytes + 1, 0);
  request = good_request();
  request.input = JobInput{EncodedImage{{big.data(), big.size()}}};
  request.input_name = "the request body (the image)";
  Admitted oversized = admission_->admit(std::move(request));
  ASSERT_FALSE(oversized);
  EXPECT_EQ(oversized.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(oversized.status().message(), "the request body (the image) is 65 bytes; the limit is 64");

  const std::vector<float> tensor(5, 0.0f);  // tensors are the decoder's to check
  request = good_request();
  request.input = JobInput{InputTensor{tensor}};
  EXPECT_TRUE(admission_->admit(std::move(request)));
}

TEST_F(AdmissionTest, DrainingIsUnavailableButAStreamsMessagesNeedNoSlot) {
  in_flight_.start_draining();
  Admitted refused = admission_->admit(good_request());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(refused.status().message(), "the server is shutting down");

  AdmissionRequest message = good_request();
  message.takes_slot = false;
  Admitted admitted = admission_->admit(std::move(message));
  EXPECT_TRUE(admitted);
  EXPECT_EQ(in_flight_.running(), 0);
}

TEST_F(AdmissionTest, RefuseAnswersTheDoorsErrorUnlessTheIdIsRefusedFirst) {
  AdmissionRequest request = good_request();
  Admitted refused = admission_->refuse(request, Status::invalid_argument("malformed query string"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.status().message(), "malformed query string");
  EXPECT_EQ(refused.request_id(), "caller-7");

  request.request_id = "bad id";
  Admitted id_first = admission_->refuse(request, Status::invalid_argument("malformed query string"));
  EXPECT_EQ(id_first.status().message(), "request_id must be 1..128 printable characters without spaces");

  request.id_rule = RequestIdRule::kReplace;
  Admitted replaced = admission_->refuse(request, Status::not_found("no model named 'x'"));
  EXPECT_EQ(replaced.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(is_valid_request_id(replaced.request_id()));
  EXPECT_EQ(in_flight_.running(), 0);
}

TEST_F(AdmissionTest, ASubmittedJobIsAnsweredAndGivesItsSlotBack) {
  const PreprocessConfig& input = models_->default_model()->config().input;
  const std::vector<float> tensor(static_cast<size_t>(input.channels * input.height * input.width), 0.0f);
  AdmissionRequest request = good_request();
  request.input = JobInput{InputTensor{tensor}};
  Admitted admitted = admission_->admit(std::move(request));
  ASSERT_TRUE(admitted) << admitted.status().to_string();
  std::promise<Result<ClassifyResult>> answer;
  admitted->done = [&answer](Result<ClassifyResult> result) { answer.set_value(std::move(result)); };
  admission_->submit(std::move(admitted));
  auto future = answer.get_future();
  ASSERT_EQ(future.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  const Result<ClassifyResult> result = future.get();
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  EXPECT_EQ(result->classes.size(), 3u);
  EXPECT_TRUE(in_flight_.wait_until_idle(SteadyClock::now() + std::chrono::seconds(5)));
}

// The group form (KServe's batch dimension): one id and one slot for all images; each image is
// checked (one oversized image refuses them all, and no slot stays taken); answered once, each
// image's result in request order.
TEST_F(AdmissionTest, AGroupIsAdmittedAsOneAndAnsweredOnceInOrder) {
  const size_t floats = input_floats(*models_->default_model());
  std::vector<std::vector<float>> tensors(3, std::vector<float>(floats));
  for (size_t i = 0; i < tensors.size(); ++i) {
    for (size_t j = 0; j < floats; ++j) tensors[i][j] = static_cast<float>((j * (i + 1)) % 7) / 7.0f;
  }
  auto inputs = [&] {
    std::vector<JobInput> v;
    v.reserve(tensors.size() + 1);
    for (const auto& t : tensors) v.emplace_back(InputTensor{t});
    return v;
  };

  const std::vector<uint8_t> big(kMaxImageBytes + 1, 0);
  std::vector<JobInput> one_oversized = inputs();
  one_oversized.emplace_back(EncodedImage{{big.data(), big.size()}});
  AdmittedGroup refused = admission_->admit_group(good_request(), std::move(one_oversized));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.status().message(), "image is 65 bytes; the limit is 64");
  EXPECT_EQ(in_flight_.running(), 0);
  AdmittedGroup none = admission_->admit_group(good_request(), {});
  EXPECT_EQ(none.status().code(), StatusCode::kInvalidArgument);

  AdmittedGroup group = admission_->admit_group(good_request(), inputs());
  ASSERT_TRUE(group) << group.status().to_string();
  EXPECT_EQ(group.request_id(), "caller-7");
  EXPECT_EQ(group.size(), 3u);
  EXPECT_EQ(in_flight_.running(), 1) << "one slot for the whole request";
  std::promise<Result<std::vector<ClassifyResult>>> answer;
  int answers = 0;
  admission_->submit_group(std::move(group), [&](Result<std::vector<ClassifyResult>> results) {
    ++answers;
    answer.set_value(std::move(results));
  });
  auto future = answer.get_future();
  ASSERT_EQ(future.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  const auto results = future.get();
  ASSERT_TRUE(results.is_ok()) << results.status().to_string();
  ASSERT_EQ(results->size(), 3u);
  EXPECT_TRUE(in_flight_.wait_until_idle(SteadyClock::now() + std::chrono::seconds(5)));
  EXPECT_EQ(answers, 1);
  // In order: each image's answer is the one a request of that image alone gets.
  for (size_t i = 0; i < tensors.size(); ++i) {
    AdmissionRequest alone = good_request();
    alone.input = JobInput{InputTensor{tensors[i]}};
    Admitted admitted = admission_->admit(std::move(alone));
    ASSERT_TRUE(admitted);
    std::promise<Result<ClassifyResult>> single;
    admitted->done = [&single](Result<ClassifyResult> result) { single.set_value(std::move(result)); };
    admission_->submit(std::move(admitted));
    auto got = single.get_future();
    ASSERT_EQ(got.wait_for(std::chrono::seconds(30)), std::future_status::ready);
    const auto r = got.get();
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ((*results)[i].probabilities, r->probabilities) << "image " << i;
  }
}

// A group whose images fail answers the error of the first failing image in request order, once.
TEST_F(AdmissionTest, AGroupFailsWithItsFirstFailingImage) {
  const std::vector<float> good(input_floats(*models_->default_model()), 0.5f);
  const std::vector<float> short_tensor(3, 0.5f);
  std::vector<JobInput> inputs{InputTensor{good}, EncodedImage{{bytes_.data(), bytes_.size()}},
                               InputTensor{short_tensor}};
  AdmittedGroup group = admission_->admit_group(good_request(), std::move(inputs));
  ASSERT_TRUE(group) << group.status().to_string();
  std::promise<Result<std::vector<ClassifyResult>>> answer;
  admission_->submit_group(std::move(group),
                           [&](Result<std::vector<ClassifyResult>> results) { answer.set_value(std::move(results)); });
  auto future = answer.get_future();
  ASSERT_EQ(future.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  const auto results = future.get();
  ASSERT_FALSE(results.is_ok());
  EXPECT_EQ(results.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(results.status().message().find("the input tensor"), std::string::npos)
      << "the undecodable image (second) fails the request, not the short tensor (third): "
      << results.status().to_string();
  EXPECT_TRUE(in_flight_.wait_until_idle(SteadyClock::now() + std::chrono::seconds(5)));
}

}  // namespace
}  // namespace tessera
