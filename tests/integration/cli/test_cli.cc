// The `tessera` CLI as a process against the real daemon.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

#include "tests/integration/daemon_test.h"
#include "tests/integration/fmnist_images.h"

namespace tessera::testing {
namespace {

constexpr milliseconds kCliTimeout{30000};

class CliTest : public DaemonTest {
 protected:
  void SetUp() override {
    DaemonTest::SetUp();
    images_ = load_fmnist_images();
    ASSERT_GE(images_.size(), 2u) << "no images in " << TESSERA_FMNIST_DIR;
  }

  ProcessOutput tessera(std::vector<std::string> args) {
    args.insert(args.begin(), TESSERA_CLI_PATH);
    return run_process(args, kCliTimeout);
  }

  std::vector<FmnistImage> images_;
};

TEST_F(CliTest, ClassifyPrintsTheTopKAndTiming) {
  const FmnistImage& image = images_[0];
  const std::string expected = classify_grpc(*stub_, read_binary(image.png)).top1();
  ASSERT_FALSE(expected.empty());

  const ProcessOutput out =
      tessera({"classify", "--server", daemon_->grpc_address(), "--top-k", "3", image.png.string()});
  ASSERT_EQ(out.exit_status, 0) << out.err;
  std::istringstream lines(out.out);
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, image.png.string());
  std::getline(lines, line);
  EXPECT_EQ(line.rfind("  1. " + expected + " ", 0), 0u) << line;
  EXPECT_EQ(line.back(), '%') << line;
  std::getline(lines, line);
  EXPECT_EQ(line.rfind("  2. ", 0), 0u) << line;
  std::getline(lines, line);
  EXPECT_EQ(line.rfind("  3. ", 0), 0u) << line;
  std::getline(lines, line);
  EXPECT_EQ(line.rfind("  timing: decode ", 0), 0u) << line;
  EXPECT_NE(line.find("total"), std::string::npos) << line;
}

TEST_F(CliTest, ClassifyGoesOnAfterAFailureAndExits1) {
  const ProcessOutput out = tessera({"classify", "--server", daemon_->grpc_address(), images_[0].png.string(),
                                     "/no/such/image.png", images_[1].jpg.string()});
  EXPECT_EQ(out.exit_status, 1);
  EXPECT_NE(out.err.find("/no/such/image.png"), std::string::npos) << out.err;
  EXPECT_NE(out.out.find(images_[0].png.string()), std::string::npos) << out.out;
  EXPECT_NE(out.out.find(images_[1].jpg.string()), std::string::npos) << out.out;
}

TEST_F(CliTest, ClassifyReportsServerErrors) {
  const ProcessOutput unknown =
      tessera({"classify", "--server", daemon_->grpc_address(), "--model", "nope", images_[0].png.string()});
  EXPECT_EQ(unknown.exit_status, 1);
  EXPECT_NE(unknown.err.find("NOT_FOUND"), std::string::npos) << unknown.err;
}

TEST_F(CliTest, ClassifyJsonIsOneObjectPerImage) {
  const ProcessOutput out = tessera(
      {"classify", "--server", daemon_->grpc_address(), "--json", images_[0].png.string(), images_[1].png.string()});
  ASSERT_EQ(out.exit_status, 0) << out.err;
  std::istringstream lines(out.out);
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    const auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j["file"], images_[static_cast<size_t>(count)].png.string());
    EXPECT_EQ(j["model"], "fashion-mnist");
    EXPECT_EQ(j["model_version"], 1) << "the version that served it";
    EXPECT_EQ(j["classes"].size(), 5u);
    EXPECT_TRUE(j["timing"]["total_us"].is_number());
    ++count;
  }
  EXPECT_EQ(count, 2);
}

TEST_F(CliTest, ModelsListsTheBundledModel) {
  const ProcessOutput out = tessera({"models", "--server", daemon_->grpc_address()});
  ASSERT_EQ(out.exit_status, 0) << out.err;
  EXPECT_NE(out.out.find("fashion-mnist"), std::string::npos) << out.out;
  EXPECT_NE(out.out.find("1x28x28"), std::string::npos) << out.out;
  EXPECT_NE(out.out.find("Ankle boot"), std::string::npos) << out.out;

  const ProcessOutput json_out = tessera({"models", "--server", daemon_->grpc_address(), "--json"});
  ASSERT_EQ(json_out.exit_status, 0) << json_out.err;
  const auto j = nlohmann::json::parse(json_out.out);
  EXPECT_EQ(j["models"][0]["name"], "fashion-mnist");
  EXPECT_EQ(j["models"][0]["labels"].size(), 10u);
}

TEST_F(CliTest, UnreachableServerFails) {
  daemon_->stop();
  const ProcessOutput out = tessera({"models", "--server", daemon_->grpc_address(), "--timeout", "3"});
  EXPECT_EQ(out.exit_status, 1);
  EXPECT_NE(out.err.find("UNAVAILABLE"), std::string::npos) << out.err;
}

}  // namespace
}  // namespace tessera::testing
