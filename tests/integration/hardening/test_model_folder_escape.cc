// Issue 24.7: a model folder cannot make the repository's load API read a file outside it. A
// folder whose model.toml names its labels by an absolute path, by ".." or through a symbolic
// link outside (here a 10-line "secret" file, which fits the model's 10 classes, so before the fix
// it loaded and every answer's labels were the secret's lines) fails its load with a clear reason
// in the index, serves nothing, and gives the secret to nobody; the others serve on.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/integration/models/repository_fixture.h"

namespace tessera::testing {
namespace {

namespace fs = std::filesystem;

class ModelFolderEscapeTest : public RepositoryDaemonTest {
 protected:
  // A secret beside the repository, and model folder `name`: the bundled model whose model.toml
  // names its labels `labels`.
  void add_thief(const std::string& name, const std::string& labels) {
    const fs::path dir = repo_.root() / name;
    fs::copy(bundled_models_dir() / kFmnistModel, dir, fs::copy_options::recursive);
    RepositoryFolder::write_toml(dir, name, "");
    std::ifstream in(dir / "model.toml");
    std::string toml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t at = toml.find("labels.txt");
    ASSERT_NE(at, std::string::npos) << toml;
    toml.replace(at, 10, labels);
    std::ofstream(dir / "model.toml", std::ios::trunc) << toml;
  }

  void SetUp() override {
    secret_ = repo_.root().string() + "-secret.txt";
    std::ofstream out(secret_);
    for (int i = 0; i < 10; ++i) out << "SECRET-" << i << "\n";
  }
  void TearDown() override {
    RepositoryDaemonTest::TearDown();
    fs::remove(secret_);
  }

  // Loading `name` fails with `why` in the index, and the model serves nothing (before the fix it
  // loaded, and answered with the secret's lines as labels).
  void expect_load_refused(const std::string& name, const std::string& why) {
    EXPECT_EQ(repository(name, "load").status, 200);
    GrpcAnswer served;
    served.status = grpc::Status(grpc::StatusCode::NOT_FOUND, "not asked");
    ASSERT_TRUE(eventually([&] {
      const nlohmann::json r = row(name);
      if (r.is_object() && r["state"] == "UNAVAILABLE") return true;
      served = classify(name);
      return served.status.ok();
    })) << index().dump();
    ASSERT_FALSE(served.status.ok()) << name << " loaded and answered with the label " << served.top1();
    const nlohmann::json r = row(name);
    const std::string reason = r.is_object() ? r.value("reason", "") : "";
    EXPECT_NE(reason.find("'labels'"), std::string::npos) << reason;
    EXPECT_NE(reason.find(why), std::string::npos) << reason;
    EXPECT_EQ(classify(name).status.error_code(), grpc::StatusCode::NOT_FOUND);
  }

  fs::path secret_;
};

TEST_F(ModelFolderEscapeTest, LabelsFromOutsideTheFolderAreRefusedAndNeverServed) {
  start();  // a repository that is broken at start stops the start: the thieves come after
  add_thief("absolute", secret_.string());
  add_thief("dotdot", "../../" + secret_.filename().string());
  add_thief("linked", "linked-labels.txt");
  fs::create_symlink(secret_, repo_.root() / "linked" / "linked-labels.txt");

  expect_load_refused("absolute", "not the absolute path");
  expect_load_refused("dotdot", "outside the model folder");
  expect_load_refused("linked", "outside the model folder");

  // Nothing the daemon says carries the secret: not the index, not the models page, not metadata.
  const HttpReply models = http_->get("/v1/models");
  EXPECT_EQ(models.status, 200);
  EXPECT_EQ(models.body.find("SECRET-"), std::string::npos) << models.body;
  EXPECT_EQ(index().dump().find("SECRET-"), std::string::npos);
  EXPECT_NE(http_->get("/v2/models/linked").status, 200);
  EXPECT_TRUE(classify(kFmnistModel).status.ok()) << "the others serve on";
  EXPECT_TRUE(classify("spare").status.ok());
}

}  // namespace
}  // namespace tessera::testing
