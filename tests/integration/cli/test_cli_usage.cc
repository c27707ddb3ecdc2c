// The CLI's conventions without a daemon: usage errors exit 2 with a message on stderr (not
// CLI11's 105-114), --help and --version exit 0, and `tessera eval --json` says what the text
// says, with a progress bar only on a terminal.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <numeric>
#include <regex>

#include "tests/integration/cli_test_util.h"
#include "tests/integration/tesserad_process.h"

namespace tessera::testing {
namespace {

using nlohmann::json;

// Runs `tessera args`, expecting a usage error: status 2, nothing on stdout, `mention` on stderr.
void expect_usage_error(const std::vector<std::string>& args, const std::string& mention) {
  std::string line;
  for (const std::string& a : args) line += a + " ";
  SCOPED_TRACE("tessera " + line);
  const ProcessOutput out = run_tessera(args);
  EXPECT_EQ(out.exit_status, 2) << out.err;
  EXPECT_TRUE(out.out.empty()) << out.out;
  EXPECT_NE(out.err.find(mention), std::string::npos) << out.err;
}

TEST(CliUsage, UsageErrorsExit2WithAMessage) {
  const std::string image = (std::filesystem::path(TESSERA_SOURCE_DIR) / "models/fashion-mnist/calibration").string();
  expect_usage_error({}, "subcommand");                                         // none given
  expect_usage_error({"frobnicate"}, "frobnicate");                             // unknown subcommand
  expect_usage_error({"classify", "--no-such-flag", image}, "--no-such-flag");  // unknown option
  expect_usage_error({"classify"}, "images");                                   // missing required positional
  expect_usage_error({"eval"}, "--model");                                      // missing required option
  expect_usage_error({"classify", "--top-k", "0", image}, "--top-k");           // out of range
  expect_usage_error({"bench", "--concurrency", "many"}, "--concurrency");      // not a number
  expect_usage_error({"bench", "--protocol", "triton"}, "--protocol");          // not one of the choices
  expect_usage_error({"classify", "--timeout"}, "--timeout");                   // value missing
  expect_usage_error({"plan", "--board"}, "--board");
  // The KServe flags' combinations.
  expect_usage_error({"classify", "-i", "http", image}, "needs --protocol kserve");
  expect_usage_error({"classify", "--server", "http://127.0.0.1:8080", image}, "needs --protocol kserve");
  expect_usage_error({"bench", "--protocol", "kserve", "--server", "https://127.0.0.1:8443"}, "https://");
  expect_usage_error({"bench", "--protocol", "kserve", "--server", "http://127.0.0.1:1", "-i", "grpc"}, "scheme");
  expect_usage_error({"bench", "--protocol", "kserve", "--input-tensor-format", "json"}, "-i http");
  expect_usage_error({"bench", "--protocol", "kserve", "-i", "http", "--mode", "stream"}, "--mode stream");
}

TEST(CliUsage, HelpAndVersionExit0) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--help"}, {"classify", "--help"}, {"bench", "-h"}, {"eval", "--help"}}) {
    const ProcessOutput out = run_tessera(args);
    EXPECT_EQ(out.exit_status, 0) << args.front() << out.err;
    EXPECT_NE(out.out.find("Usage"), std::string::npos) << out.out;
  }
  const ProcessOutput bench_help = run_tessera({"bench", "--help"});
  EXPECT_NE(bench_help.out.find("--protocol"), std::string::npos) << bench_help.out;
  EXPECT_NE(bench_help.out.find("-i,--transport"), std::string::npos) << bench_help.out;
  const ProcessOutput version = run_tessera({"--version"});
  EXPECT_EQ(version.exit_status, 0);
  EXPECT_EQ(version.out.rfind("tessera ", 0), 0u) << version.out;
}

class CliEvalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz")) {
      GTEST_SKIP() << "Fashion-MNIST is not installed in /usr/share/datasets/fashion-mnist (tools/setup.sh)";
    }
  }
  // The fp32 path on 300 images: a few seconds.
  std::vector<std::string> eval_args() const {
    return {"eval",    "--model", (bundled_models_dir() / "fashion-mnist").string(), "--precision", "fp32",
            "--limit", "300"};
  }
};

TEST_F(CliEvalTest, JsonSaysWhatTheTextSays) {
  const ProcessOutput text = run_tessera(eval_args(), milliseconds(300000));
  ASSERT_EQ(text.exit_status, 0) << text.err;
  std::smatch m;
  const std::regex line(R"(top-1: ([0-9.]+)% \(([0-9]+)/300\), top-5: ([0-9.]+)% \(([0-9]+)/300\))");
  ASSERT_TRUE(std::regex_search(text.out, m, line)) << text.out;
  EXPECT_TRUE(text.err.empty()) << "no progress bar when stderr is not a terminal: " << text.err;

  std::vector<std::string> args = eval_args();
  args.emplace_back("--json");
  const ProcessOutput out = run_tessera(args, milliseconds(300000));
  ASSERT_EQ(out.exit_status, 0) << out.err;
  EXPECT_TRUE(out.err.empty()) << out.err;
  const json j = json::parse(out.out);  // the whole of stdout is one JSON object
  EXPECT_EQ(j["model"], "fashion-mnist");
  EXPECT_EQ(j["precision"], "fp32");
  EXPECT_EQ(j["images"], 300);
  EXPECT_EQ(j["top1"]["correct"].get<int>(), std::stoi(m[2]));
  EXPECT_EQ(j["top5"]["correct"].get<int>(), std::stoi(m[4]));
  EXPECT_NEAR(j["top1"]["accuracy"].get<double>() * 100, std::stod(m[1]), 0.005);
  EXPECT_GE(j["top5"]["correct"].get<int>(), j["top1"]["correct"].get<int>());
  EXPECT_GT(j["top1"]["accuracy"].get<double>(), 0.7) << "the bundled model is ~90% accurate";
  // Per class and the confusion matrix add up to the same figures.
  ASSERT_EQ(j["per_class"].size(), 10u);
  ASSERT_EQ(j["confusion"].size(), 10u);
  int images = 0, diagonal = 0, per_class_correct = 0;
  for (size_t c = 0; c < 10; ++c) {
    const auto row = j["confusion"][c].get<std::vector<int>>();
    images += std::accumulate(row.begin(), row.end(), 0);
    diagonal += row[c];
    per_class_correct += j["per_class"][c]["correct"].get<int>();
    EXPECT_EQ(j["per_class"][c]["images"].get<int>(), std::accumulate(row.begin(), row.end(), 0));
  }
  EXPECT_EQ(images, 300);
  EXPECT_EQ(diagonal, j["top1"]["correct"].get<int>());
  EXPECT_EQ(per_class_correct, diagonal);
  EXPECT_EQ(j["per_class"][9]["label"], "Ankle boot");
  EXPECT_GT(j["seconds"].get<double>(), 0);
}

// On a terminal (script(1) gives it one) eval draws its bar on stderr; --no-progress stops it.
TEST_F(CliEvalTest, ProgressBarOnlyOnATerminal) {
  if (!std::filesystem::exists("/usr/bin/script")) GTEST_SKIP() << "no script(1) to run under a terminal";
  std::string command = TESSERA_CLI_PATH;
  for (const std::string& a : eval_args()) command += " " + a;
  const ProcessOutput tty = run_process({"/usr/bin/script", "-qec", command, "/dev/null"}, milliseconds(300000));
  ASSERT_EQ(tty.exit_status, 0) << tty.out << tty.err;
  EXPECT_NE(tty.out.find("] 300/300"), std::string::npos) << tty.out;
  EXPECT_NE(tty.out.find("top-1: "), std::string::npos) << tty.out;
  const ProcessOutput quiet =
      run_process({"/usr/bin/script", "-qec", command + " --no-progress", "/dev/null"}, milliseconds(300000));
  ASSERT_EQ(quiet.exit_status, 0) << quiet.out << quiet.err;
  EXPECT_EQ(quiet.out.find("] 300/300"), std::string::npos) << quiet.out;
  EXPECT_NE(quiet.out.find("top-1: "), std::string::npos) << quiet.out;
}

}  // namespace
}  // namespace tessera::testing
