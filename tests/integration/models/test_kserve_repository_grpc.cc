// KServe v2's model repository extension over gRPC (issue 16, point 2): RepositoryIndex,
// RepositoryModelLoad and RepositoryModelUnload on inference.GRPCInferenceService, in Triton's
// message shapes, against a real tesserad on loopback. The index lists every version and its
// state; load, reload (a new version) and unload act on the same repository as REST; an unknown
// model is NOT_FOUND; a load that fails is reported in the index while the others keep serving;
// without the bearer token every call is UNAUTHENTICATED.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "tests/integration/kserve_client.h"
#include "tests/integration/models/repository_fixture.h"
#include "tests/integration/temp_file.h"

namespace tessera::testing {
namespace {

namespace fs = std::filesystem;
using KserveRepositoryGrpcTest = RepositoryDaemonTest;
using Index = inference::RepositoryIndexResponse;

// The calls with an optional bearer token, each with a 20 s deadline.
class RepositoryCalls {
 public:
  RepositoryCalls(const TesseradProcess& daemon, std::string token = "")
      : stub_(kserve_stub(daemon)), token_(std::move(token)) {}

  grpc::Status index(Index& response, bool ready = false, const std::string& repository = "") {
    inference::RepositoryIndexRequest request;
    request.set_ready(ready);
    request.set_repository_name(repository);
    auto context = make_context();
    return stub_->RepositoryIndex(context.get(), request, &response);
  }
  // The row of `name` at `version` ("" = the model's own row); null when there is none.
  const Index::ModelIndex* row(Index& scratch, const std::string& name, const std::string& version) {
    scratch.Clear();
    if (!index(scratch).ok()) return nullptr;
    for (const auto& r : scratch.models()) {
      if (r.name() == name && r.version() == version) return &r;
    }
    return nullptr;
  }
  grpc::Status load(const std::string& name, const std::string& parameter = "", const std::string& repository = "") {
    inference::RepositoryModelLoadRequest request;
    request.set_model_name(name);
    request.set_repository_name(repository);
    if (!parameter.empty()) (*request.mutable_parameters())[parameter].set_string_param("{}");
    inference::RepositoryModelLoadResponse response;
    auto context = make_context();
    return stub_->RepositoryModelLoad(context.get(), request, &response);
  }
  grpc::Status unload(const std::string& name, const std::string& parameter = "") {
    inference::RepositoryModelUnloadRequest request;
    request.set_model_name(name);
    if (!parameter.empty()) (*request.mutable_parameters())[parameter].set_bool_param(true);
    inference::RepositoryModelUnloadResponse response;
    auto context = make_context();
    return stub_->RepositoryModelUnload(context.get(), request, &response);
  }
  KserveAnswer infer(const std::string& image, const std::string& model) {
    inference::ModelInferRequest request = bytes_request(image, false, model);
    auto context = make_context();
    KserveAnswer answer;
    answer.status = stub_->ModelInfer(context.get(), request, &answer.response);
    return answer;
  }

 private:
  std::unique_ptr<grpc::ClientContext> make_context() const {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    if (!token_.empty()) context->AddMetadata("authorization", "Bearer " + token_);
    return context;
  }

  std::unique_ptr<inference::GRPCInferenceService::Stub> stub_;
  std::string token_;
};

TEST_F(KserveRepositoryGrpcTest, IndexLoadUnloadAndANewVersion) {
  start();
  RepositoryCalls calls(*daemon_);
  Index index;
  ASSERT_TRUE(calls.index(index).ok());
  const auto* fmnist = calls.row(index, kFmnistModel, "1");
  ASSERT_NE(fmnist, nullptr) << index.DebugString();
  EXPECT_EQ(fmnist->state(), "READY");
  EXPECT_EQ(fmnist->reason(), "");
  ASSERT_NE(calls.row(index, "spare", "1"), nullptr) << index.DebugString();

  EXPECT_TRUE(calls.unload("spare", "unload_dependents").ok()) << "Triton's unload parameter is accepted";
  const auto* spare = calls.row(index, "spare", "");
  ASSERT_NE(spare, nullptr) << index.DebugString();
  EXPECT_EQ(spare->state(), "UNAVAILABLE");
  EXPECT_EQ(spare->reason(), "unloaded");
  EXPECT_EQ(calls.infer(image_, "spare").status.error_code(), grpc::StatusCode::NOT_FOUND);
  Index ready;
  ASSERT_TRUE(calls.index(ready, true).ok());
  for (const auto& r : ready.models()) EXPECT_EQ(r.state(), "READY") << "ready = true: " << ready.DebugString();
  EXPECT_EQ(ready.models_size(), 1) << ready.DebugString();

  EXPECT_TRUE(calls.load("spare").ok());
  ASSERT_TRUE(eventually([&] { return calls.row(index, "spare", "1") != nullptr; })) << index.DebugString();
  const KserveAnswer served = calls.infer(image_, "spare");
  EXPECT_TRUE(served.status.ok()) << served.status.error_message();

  // A new version: RepositoryModelLoad reloads the folder; latest = 1 serves 2 in place of 1.
  repo_.add_version(2);
  EXPECT_TRUE(calls.load(kFmnistModel).ok());
  ASSERT_TRUE(eventually([&] {
    return calls.row(index, kFmnistModel, "2") != nullptr && calls.row(index, kFmnistModel, "1") == nullptr;
  })) << index.DebugString();
  const KserveAnswer v2 = calls.infer(image_, kFmnistModel);
  ASSERT_TRUE(v2.status.ok()) << v2.status.error_message();
  EXPECT_EQ(v2.response.model_version(), "2");
}

TEST_F(KserveRepositoryGrpcTest, UnknownModelsAndRequestsTesseradDoesNotTake) {
  start();
  RepositoryCalls calls(*daemon_);
  const grpc::Status load = calls.load("nosuch");
  EXPECT_EQ(load.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(load.error_message().find("'nosuch'"), std::string::npos) << load.error_message();
  EXPECT_EQ(calls.unload("nosuch").error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(calls.load("").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(calls.load("spare", "config").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(calls.load("spare", "", "other").error_code(), grpc::StatusCode::UNIMPLEMENTED);
  Index index;
  EXPECT_EQ(calls.index(index, false, "other").error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_NE(calls.row(index, "spare", "1"), nullptr) << "nothing changed";
}

TEST_F(KserveRepositoryGrpcTest, AFailedLoadIsInTheIndexWhileTheOthersServe) {
  start();
  // A folder whose model file is missing.
  fs::create_directories(repo_.root() / "broken");
  RepositoryFolder::write_toml(repo_.root() / "broken", "broken", "");
  fs::copy(bundled_models_dir() / kFmnistModel / "labels.txt", repo_.root() / "broken" / "labels.txt");
  RepositoryCalls calls(*daemon_);
  Index index;
  ASSERT_NE(calls.row(index, "broken", ""), nullptr) << "the index rescans the folder: " << index.DebugString();
  EXPECT_EQ(calls.row(index, "broken", "")->reason(), "not loaded");

  EXPECT_TRUE(calls.load("broken").ok()) << "a load only starts";
  ASSERT_TRUE(eventually([&] {
    const auto* broken = calls.row(index, "broken", "");
    return broken != nullptr && broken->state() == "UNAVAILABLE" && broken->reason() != "not loaded";
  })) << index.DebugString();
  const std::string reason = calls.row(index, "broken", "")->reason();
  EXPECT_NE(reason.find("model.onnx, which does not exist"), std::string::npos) << reason;
  EXPECT_EQ(calls.infer(image_, "broken").status.error_code(), grpc::StatusCode::NOT_FOUND);
  for (const char* model : {kFmnistModel, "spare"}) {
    const KserveAnswer served = calls.infer(image_, model);
    EXPECT_TRUE(served.status.ok()) << model << ": " << served.status.error_message();
  }
  EXPECT_EQ(calls.row(index, kFmnistModel, "1")->state(), "READY");
}

TEST_F(KserveRepositoryGrpcTest, EveryCallWantsTheBearerToken) {
  const TempFile tokens("kserve-repo-token-5e1a\n");
  start({"--auth-tokens", tokens.path.string()});
  RepositoryCalls anonymous(*daemon_);
  Index index;
  EXPECT_EQ(anonymous.index(index).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(anonymous.load("spare").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(anonymous.unload("spare").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  RepositoryCalls wrong(*daemon_, "not-the-token");
  EXPECT_EQ(wrong.unload("spare").error_code(), grpc::StatusCode::UNAUTHENTICATED);

  RepositoryCalls calls(*daemon_, "kserve-repo-token-5e1a");
  ASSERT_NE(calls.row(index, "spare", "1"), nullptr) << "the anonymous unload changed nothing";
  EXPECT_TRUE(calls.unload("spare").ok());
  ASSERT_NE(calls.row(index, "spare", ""), nullptr);
  EXPECT_EQ(calls.row(index, "spare", "")->reason(), "unloaded");
  EXPECT_TRUE(calls.load("spare").ok());
}

}  // namespace
}  // namespace tessera::testing
