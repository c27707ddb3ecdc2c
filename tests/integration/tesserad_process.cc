#include "tests/integration/tesserad_process.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <random>
#include <regex>

namespace tessera::testing {

std::filesystem::path bundled_models_dir() { return std::filesystem::path(TESSERA_SOURCE_DIR) / "models"; }

TesseradProcess::TesseradProcess(std::vector<std::string> extra_args, const std::filesystem::path& models_dir,
                                 const std::vector<std::string>& launcher) {
  log_file_ = std::filesystem::temp_directory_path() /
              ("tesserad-test-" + std::to_string(getpid()) + "-" + std::to_string(std::random_device{}()) + ".log");
  // No --web-root: the build tree's default, the built site (<build>/share/tessera/web).
  std::vector<std::string> argv = {TESSERAD_PATH, "--listen", "127.0.0.1", "--grpc-port",      "0",
                                   "--http-port", "0",        "--models",  models_dir.string()};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  argv.insert(argv.begin(), launcher.begin(), launcher.end());
  child_ = std::make_unique<ChildProcess>(argv, log_file_);
  if (!child_->started()) {
    error_ = "cannot start " + std::string(TESSERAD_PATH);
    return;
  }
  // Loading the model is quick; a minute covers slow CI machines.
  const auto line = child_->read_line(std::chrono::seconds(60));
  if (!line) {
    const auto status = child_->wait(milliseconds(2000));
    error_ = status ? "tesserad exited with status " + std::to_string(*status) + " before listening"
                    : "tesserad printed no startup line within 60 s";
    error_ += "; its log:\n" + log();
    return;
  }
  static const std::regex startup(R"(^tesserad: listening grpc=(\S+):(\d+) http=(\S+):(\d+) models=(\S*)$)");
  std::smatch m;
  if (!std::regex_match(*line, m, startup)) {
    error_ = "unexpected startup line: '" + *line + "'";
    return;
  }
  grpc_port_ = std::stoi(m[2]);
  http_port_ = std::stoi(m[4]);
  models_ = m[5];
  ok_ = grpc_port_ > 0 && http_port_ > 0;
  if (!ok_) error_ = "startup line has port 0: '" + *line + "'";
}

TesseradProcess::~TesseradProcess() {
  child_.reset();
  std::error_code ec;
  std::filesystem::remove(log_file_, ec);
}

std::string TesseradProcess::log() const { return read_text_file(log_file_); }

std::unique_ptr<v1::Classifier::Stub> TesseradProcess::stub() const {
  return v1::Classifier::NewStub(grpc::CreateChannel(grpc_address(), grpc::InsecureChannelCredentials()));
}

std::optional<int> TesseradProcess::stop(int signal, milliseconds timeout) {
  child_->send_signal(signal);
  return child_->wait(timeout);
}

}  // namespace tessera::testing
