// The live model repository (issue 16, point 2): KServe's repository extension over REST
// (POST /v2/repository/index, /v2/repository/models/{name}/load|unload) and tessera.v1's
// LoadModel/UnloadModel/GetModelIndex; model versions (numbered subfolders, [version_policy]),
// requests naming a version; poll mode. A client sending all along sees no failure while models
// are unloaded, loaded, reloaded and given a new version; a load that fails leaves the others
// serving and the index says why; the API wants the bearer token when tokens are on.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "tests/integration/cli_test_util.h"
#include "tests/integration/daemon_test.h"
#include "tests/integration/fmnist_images.h"
#include "tests/integration/kserve_client.h"
#include "tests/integration/models/repository_fixture.h"
#include "tests/integration/temp_file.h"

namespace tessera::testing {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nlohmann::json;
using ModelRepositoryTest = RepositoryDaemonTest;

// Sends to fashion-mnist (newest version) from its own thread until stopped; counts the answers.
class SteadyClient {
 public:
  SteadyClient(const TesseradProcess& daemon, std::string image) : image_(std::move(image)) {
    thread_ = std::thread([this, stub = daemon.stub()] {
      while (!stop_) {
        v1::ClassifyRequest request;
        request.set_model(kFmnistModel);
        request.set_image(image_);
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
        v1::ClassifyResponse response;
        const grpc::Status status = stub->Classify(&context, request, &response);
        std::lock_guard lock(mu_);
        if (status.ok()) {
          ++ok_;
          versions_.insert(response.model_version());
        } else {
          failures_.push_back(status.error_message());
        }
      }
    });
  }
  ~SteadyClient() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  int ok() {
    std::lock_guard lock(mu_);
    return ok_;
  }
  std::vector<std::string> failures() {
    std::lock_guard lock(mu_);
    return failures_;
  }
  std::set<int64_t> versions() {
    std::lock_guard lock(mu_);
    return versions_;
  }

 private:
  std::string image_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  int ok_ = 0;
  std::vector<std::string> failures_;
  std::set<int64_t> versions_;
  std::thread thread_;
};

TEST_F(ModelRepositoryTest, LoadUnloadReloadAndANewVersionWhileAClientKeepsSending) {
  start();
  ASSERT_EQ(row(kFmnistModel, "1")["state"], "READY") << index().dump();
  ASSERT_EQ(row("spare", "1")["state"], "READY") << index().dump();
  SteadyClient client(*daemon_, image_);
  ASSERT_TRUE(eventually([&] { return client.ok() > 0; }));

  // Unload, then load again, a model the client does not use.
  EXPECT_EQ(repository("spare", "unload").status, 200);
  EXPECT_EQ(row("spare")["reason"], "unloaded") << index().dump();
  EXPECT_EQ(classify("spare").status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(repository("spare", "load").status, 200);
  ASSERT_TRUE(eventually([&] { return row("spare", "1").is_object(); })) << index().dump();
  EXPECT_TRUE(classify("spare").status.ok());

  // Reload the one it uses (the old engine serves until the new one is ready) ...
  EXPECT_EQ(repository(kFmnistModel, "load").status, 200);
  ASSERT_TRUE(eventually([&] { return row(kFmnistModel).is_null(); })) << index().dump();
  const int before_version_2 = client.ok();
  // ... and give it a new version: version 2 replaces 1 (latest = 1) while 1's requests finish.
  repo_.add_version(2);
  EXPECT_EQ(repository(kFmnistModel, "load").status, 200);
  ASSERT_TRUE(eventually([&] { return row(kFmnistModel, "2").is_object() && row(kFmnistModel, "1").is_null(); }))
      << index().dump();
  ASSERT_TRUE(eventually([&] { return client.versions().contains(2); }));
  EXPECT_EQ(http_->get("/v2/models/fashion-mnist/versions/2/ready").status, 200);
  EXPECT_EQ(http_->get("/v2/models/fashion-mnist/versions/1/ready").status, 404);
  EXPECT_EQ(classify(kFmnistModel, "2").response.model_version(), 2);
  client.stop();

  EXPECT_TRUE(client.failures().empty()) << client.failures().size() << " failed, first: " << client.failures()[0];
  EXPECT_GT(client.ok(), before_version_2);
  EXPECT_TRUE(client.versions().contains(1));
  const GrpcAnswer no_version = classify(kFmnistModel, "1");
  EXPECT_EQ(no_version.status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(no_version.status.error_message().find("has no version 1 (served: 2)"), std::string::npos)
      << no_version.status.error_message();
  EXPECT_EQ(classify(kFmnistModel, "two").status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(ModelRepositoryTest, FailedLoadLeavesTheOthersServingAndTheIndexSaysWhy) {
  start();
  // A folder whose model file is missing, and one whose version policy is wrong.
  fs::create_directories(repo_.root() / "broken");
  RepositoryFolder::write_toml(repo_.root() / "broken", "broken", "");
  fs::copy(bundled_models_dir() / kFmnistModel / "labels.txt", repo_.root() / "broken" / "labels.txt");
  fs::create_directories(repo_.root() / "badpolicy" / "1");
  RepositoryFolder::write_toml(repo_.root() / "badpolicy", "badpolicy", "[version_policy]\nlatest = 0\n");
  EXPECT_EQ(row("broken")["reason"], "not loaded") << index().dump();

  EXPECT_EQ(repository("broken", "load").status, 200);
  EXPECT_EQ(repository("badpolicy", "load").status, 200);
  ASSERT_TRUE(eventually(
      [&] { return row("broken")["state"] == "UNAVAILABLE" && row("badpolicy")["state"] == "UNAVAILABLE"; }));
  const std::string broken = row("broken")["reason"];
  EXPECT_NE(broken.find("model.onnx, which does not exist"), std::string::npos) << broken;
  const std::string badpolicy = row("badpolicy")["reason"];
  EXPECT_NE(badpolicy.find("'version_policy.latest' must be from 1 to 1000"), std::string::npos) << badpolicy;
  EXPECT_EQ(classify("broken").status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_TRUE(classify(kFmnistModel).status.ok()) << "the others serve on";
  EXPECT_TRUE(classify("spare").status.ok());

  const HttpReply unknown = repository("nosuch", "load");
  EXPECT_EQ(unknown.status, 404) << unknown.body;
  EXPECT_NE(unknown.body.find("holds a model named 'nosuch'"), std::string::npos) << unknown.body;
  EXPECT_EQ(repository("nosuch", "unload").status, 404);
  EXPECT_EQ(http_->get("/v2/repository/index").status, 405);
}

TEST_F(ModelRepositoryTest, PollModePicksUpANewFolderAndItsRemoval) {
  start({"--model-control", "poll", "--repository-poll-ms", "200"});
  EXPECT_EQ(classify("second").status.error_code(), grpc::StatusCode::NOT_FOUND);
  repo_.add_copy("second");
  ASSERT_TRUE(eventually([&] { return row("second", "1").is_object(); })) << index().dump();
  const GrpcAnswer served = classify("second");
  ASSERT_TRUE(served.status.ok()) << served.status.error_message();
  EXPECT_EQ(served.response.model(), "second");

  fs::remove_all(repo_.root() / "second");
  ASSERT_TRUE(eventually([&] { return classify("second").status.error_code() == grpc::StatusCode::NOT_FOUND; }));
  EXPECT_TRUE(classify(kFmnistModel).status.ok());
  EXPECT_NE(daemon_->log().find("model 'second': unloaded"), std::string::npos);
}

TEST_F(ModelRepositoryTest, TheRepositoryApiWantsTheBearerToken) {
  const TempFile tokens("repo-token-31c9\n");
  start({"--auth-tokens", tokens.path.string()});
  EXPECT_EQ(http_->post("/v2/repository/index", "{}", "application/json").status, 401);
  EXPECT_EQ(repository("spare", "unload").status, 401);
  EXPECT_TRUE(classify("spare").status.error_code() == grpc::StatusCode::UNAUTHENTICATED);
  {
    grpc::ClientContext context;
    v1::UnloadModelRequest request;
    request.set_name("spare");
    v1::UnloadModelResponse response;
    EXPECT_EQ(stub_->UnloadModel(&context, request, &response).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  http_->set_header("authorization", "Bearer repo-token-31c9");
  EXPECT_EQ(http_->post("/v2/repository/index", "{}", "application/json").status, 200);
  grpc::ClientContext context;
  context.AddMetadata("authorization", "Bearer repo-token-31c9");
  v1::UnloadModelRequest request;
  request.set_name("spare");
  v1::UnloadModelResponse response;
  EXPECT_TRUE(stub_->UnloadModel(&context, request, &response).ok());
  EXPECT_EQ(row("spare")["reason"], "unloaded");
}

TEST_F(ModelRepositoryTest, TheCliListsLoadsAndUnloads) {
  start();
  const std::string server = daemon_->grpc_address();
  const ProcessOutput unloaded = run_tessera({"models", "unload", "spare", "--server", server});
  EXPECT_EQ(unloaded.exit_status, 0) << unloaded.err;
  EXPECT_EQ(unloaded.out, "unloaded spare\n");
  const ProcessOutput listed = run_tessera({"models", "index", "--server", server});
  EXPECT_NE(listed.out.find("spare  -  UNAVAILABLE  unloaded"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("fashion-mnist  1  READY"), std::string::npos) << listed.out;
  const ProcessOutput loaded = run_tessera({"models", "load", "spare", "--server", server});
  EXPECT_EQ(loaded.exit_status, 0) << loaded.err;
  ASSERT_TRUE(eventually([&] { return row("spare", "1").is_object(); })) << index().dump();
  const ProcessOutput models = run_tessera({"models", "--server", server, "--json"});
  EXPECT_EQ(nlohmann::json::parse(models.out)["models"][0]["version"], 1) << models.out;
  const ProcessOutput unknown = run_tessera({"models", "load", "nosuch", "--server", server});
  EXPECT_EQ(unknown.exit_status, 1);
  EXPECT_NE(unknown.err.find("NOT_FOUND"), std::string::npos) << unknown.err;
  EXPECT_EQ(run_tessera({"models", "load", "--server", server}).exit_status, 2) << "load wants a name";
}

}  // namespace
}  // namespace tessera::testing
