// The model repository tests' fixture (tests/integration/models/): a repository folder of the
// test's own and a tesserad serving it, with helpers for the index, the REST repository calls and
// tessera.v1 Classify.
#pragma once

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/daemon_test.h"
#include "tests/integration/fmnist_images.h"
#include "tests/integration/http_client.h"
#include "tests/integration/kserve_client.h"
#include "tests/integration/tesserad_process.h"

namespace tessera::testing {

// A repository folder of its own: fashion-mnist as a versioned model (model.toml with
// [version_policy] latest = 1, its files in 1/) and `spare`, an unversioned copy under another name.
class RepositoryFolder {
 public:
  RepositoryFolder() {
    root_ = std::filesystem::temp_directory_path() / ("tessera-repo-" + std::to_string(std::random_device{}()));
    const std::filesystem::path bundled = bundled_models_dir() / kFmnistModel;
    const std::filesystem::path versioned = root_ / kFmnistModel;
    std::filesystem::create_directories(versioned / "1");
    for (const char* file : {"model.onnx", "labels.txt"}) std::filesystem::copy(bundled / file, versioned / "1" / file);
    std::filesystem::copy(bundled / "calibration", versioned / "1" / "calibration",
                          std::filesystem::copy_options::recursive);
    write_toml(versioned, "fashion-mnist", "[version_policy]\nlatest = 1\n");
    add_copy("spare");
  }
  ~RepositoryFolder() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  const std::filesystem::path& root() const { return root_; }

  // An unversioned copy of the bundled model named `name`, in folder `name`: made beside the
  // repository and moved in at once, so a poll never sees it half written.
  void add_copy(const std::string& name) const {
    const std::filesystem::path staging = root_.string() + "-staging-" + name;
    std::filesystem::copy(bundled_models_dir() / kFmnistModel, staging, std::filesystem::copy_options::recursive);
    write_toml(staging, name, "");
    std::filesystem::rename(staging, root_ / name);
  }
  // Version `version` of fashion-mnist: a copy of version 1's files.
  void add_version(int version) const {
    const std::filesystem::path dir = root_ / kFmnistModel;
    std::filesystem::copy(dir / "1", dir / std::to_string(version), std::filesystem::copy_options::recursive);
  }
  // The bundled model.toml with `name`, batches of one, and `extra` tables appended.
  static void write_toml(const std::filesystem::path& dir, const std::string& name, const std::string& extra) {
    std::ifstream in(bundled_models_dir() / kFmnistModel / "model.toml");
    std::stringstream text;
    text << in.rdbuf();
    std::string toml = text.str();
    toml.replace(toml.find("\"fashion-mnist\""), 15, "\"" + name + "\"");
    std::ofstream(dir / "model.toml", std::ios::trunc) << toml << "\n[batching]\nmax_batch = 1\n" << extra;
  }

 private:
  std::filesystem::path root_;
};

class RepositoryDaemonTest : public ::testing::Test {
 protected:
  void start(std::vector<std::string> args = {}) {
    images_ = load_fmnist_images();
    ASSERT_FALSE(images_.empty()) << "no images in " << TESSERA_FMNIST_DIR;
    image_ = read_binary(images_[0].png);
    args.insert(args.begin(), {"--device", "emu"});
    daemon_ = std::make_unique<TesseradProcess>(args, repo_.root());
    ASSERT_TRUE(daemon_->ok()) << daemon_->error();
    stub_ = daemon_->stub();
    http_ = std::make_unique<HttpClient>(daemon_->http_port());
  }

  void TearDown() override {
    if (HasFailure() && daemon_) std::cerr << "---- tesserad log ----\n" << daemon_->log() << "----\n";
  }

  nlohmann::json index() {
    const HttpReply reply = http_->post("/v2/repository/index", "{}", "application/json");
    EXPECT_EQ(reply.status, 200) << reply.body;
    return nlohmann::json::parse(reply.body, nullptr, false);
  }

  // The index row of `name` at `version` ("" = the model's own row); null when there is none.
  nlohmann::json row(const std::string& name, const std::string& version = "") {
    for (const nlohmann::json& r : index()) {
      if (r["name"] == name && r.value("version", "") == version) return r;
    }
    return nullptr;
  }

  // Waits (bounded: loads plan and calibrate while a client keeps the machine busy) for `done`.
  static bool eventually(const std::function<bool()>& done) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < until) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  HttpReply repository(const std::string& name, const std::string& action) {
    return http_->post("/v2/repository/models/" + name + "/" + action, "{}", "application/json");
  }

  GrpcAnswer classify(const std::string& model, const std::string& version = "") {
    v1::ClassifyRequest request;
    request.set_model(model);
    request.set_model_version(version);
    request.set_image(image_);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    GrpcAnswer answer;
    answer.status = stub_->Classify(&context, request, &answer.response);
    return answer;
  }

  RepositoryFolder repo_;
  std::vector<FmnistImage> images_;
  std::string image_;
  std::unique_ptr<TesseradProcess> daemon_;
  std::unique_ptr<v1::Classifier::Stub> stub_;
  std::unique_ptr<HttpClient> http_;
};

}  // namespace tessera::testing
