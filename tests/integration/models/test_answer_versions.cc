// Every answer that names a model names the version that served it (issue 16, point 2): unary
// Classify, each ClassifyStream answer, KServe ModelInfer over gRPC and REST, and POST
// /v1/classify; across a version change, and on a stream opened before it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <string>

#include "tests/integration/kserve_client.h"
#include "tests/integration/models/repository_fixture.h"

namespace tessera::testing {
namespace {

// The version each door's answer names, as a string ("" when the call failed).
struct DoorVersions {
  std::string classify, kserve_grpc, kserve_rest, http_classify;
};

class VersionedAnswers : public RepositoryDaemonTest {
 protected:
  DoorVersions ask_every_door() {
    DoorVersions v;
    const GrpcAnswer unary = classify(kFmnistModel);
    EXPECT_TRUE(unary.status.ok()) << unary.status.error_message();
    if (unary.status.ok()) v.classify = std::to_string(unary.response.model_version());
    auto kserve = kserve_stub(*daemon_);
    const KserveAnswer infer = kserve_infer(*kserve, bytes_request(image_));
    EXPECT_TRUE(infer.status.ok()) << infer.status.error_message();
    v.kserve_grpc = infer.response.model_version();
    const std::string body =
        R"({"inputs":[{"name":"image","datatype":"BYTES","shape":[1],"data":[")" + base64(image_) + R"("]}]})";
    const HttpReply rest = http_->post("/v2/models/fashion-mnist/infer", body, "application/json");
    EXPECT_EQ(rest.status, 200) << rest.body;
    v.kserve_rest = nlohmann::json::parse(rest.body, nullptr, false).value("model_version", "");
    const HttpReply http = http_->post("/v1/classify?model=fashion-mnist", image_, "image/png");
    EXPECT_EQ(http.status, 200) << http.body;
    const auto parsed = nlohmann::json::parse(http.body, nullptr, false);
    if (parsed.contains("model_version")) v.http_classify = std::to_string(parsed["model_version"].get<int64_t>());
    return v;
  }

  // One request on an open stream and its answer's version (-1 when the stream broke).
  static int64_t stream_version(grpc::ClientReaderWriter<v1::ClassifyRequest, v1::ClassifyResponse>& stream,
                                const std::string& image) {
    v1::ClassifyRequest request;
    request.set_model(kFmnistModel);
    request.set_image(image);
    v1::ClassifyResponse response;
    if (!stream.Write(request) || !stream.Read(&response)) return -1;
    EXPECT_TRUE(response.error().empty()) << response.error();
    EXPECT_EQ(response.model(), kFmnistModel);
    return response.model_version();
  }
};

TEST_F(VersionedAnswers, EveryDoorNamesTheVersionThatServedAcrossAVersionChange) {
  start();
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(150));
  auto stream = stub_->ClassifyStream(&context);
  EXPECT_EQ(stream_version(*stream, image_), 1);
  const DoorVersions before = ask_every_door();
  EXPECT_EQ(before.classify, "1");
  EXPECT_EQ(before.kserve_grpc, "1");
  EXPECT_EQ(before.kserve_rest, "1");
  EXPECT_EQ(before.http_classify, "1");

  repo_.add_version(2);
  ASSERT_EQ(repository(kFmnistModel, "load").status, 200);
  ASSERT_TRUE(eventually([&] { return row(kFmnistModel, "2").is_object() && row(kFmnistModel, "1").is_null(); }))
      << index().dump();
  EXPECT_EQ(stream_version(*stream, image_), 2) << "the stream opened before the change";
  const DoorVersions after = ask_every_door();
  EXPECT_EQ(after.classify, "2");
  EXPECT_EQ(after.kserve_grpc, "2");
  EXPECT_EQ(after.kserve_rest, "2");
  EXPECT_EQ(after.http_classify, "2");

  // A stream's failed request names no version it was not served by; a named one answers on it.
  v1::ClassifyRequest gone;
  gone.set_model(kFmnistModel);
  gone.set_model_version("1");
  gone.set_image(image_);
  v1::ClassifyResponse answer;
  ASSERT_TRUE(stream->Write(gone) && stream->Read(&answer));
  EXPECT_EQ(answer.error_code(), static_cast<uint32_t>(grpc::StatusCode::NOT_FOUND)) << answer.error();
  EXPECT_EQ(answer.model_version(), 0);
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

}  // namespace
}  // namespace tessera::testing
