// The real tesserad binary as a child process, on ephemeral loopback ports.
#pragma once

#include <chrono>
#include <csignal>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessera/v1/classifier.grpc.pb.h"
#include "tests/integration/subprocess.h"

namespace tessera::testing {

// The bundled model repository of the source tree.
std::filesystem::path bundled_models_dir();

class TesseradProcess {
 public:
  // Starts tesserad --grpc-port 0 --http-port 0 --listen 127.0.0.1 --models `models_dir` plus
  // `extra_args`, and waits (bounded) for its startup line. Its web root is the default, the build
  // tree's built site. A `launcher` (e.g. {"/usr/bin/prlimit", "--nofile=256", "--"}) runs it.
  explicit TesseradProcess(std::vector<std::string> extra_args = {},
                           const std::filesystem::path& models_dir = bundled_models_dir(),
                           const std::vector<std::string>& launcher = {});
  ~TesseradProcess();  // kills the daemon if still running, removes its log

  // False when the daemon did not print its startup line in time; error() says why.
  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  int grpc_port() const { return grpc_port_; }
  int http_port() const { return http_port_; }
  std::string grpc_address() const { return "127.0.0.1:" + std::to_string(grpc_port_); }
  // The startup line's models= list, e.g. "fashion-mnist".
  const std::string& models() const { return models_; }
  // The daemon's process id (a launcher that execs it, as prlimit does, keeps its own).
  pid_t pid() const { return child_->pid(); }
  // The daemon's stderr so far.
  std::string log() const;

  std::unique_ptr<v1::Classifier::Stub> stub() const;
  // Sends `signal` and waits for the exit status; nullopt when it does not exit in time.
  std::optional<int> stop(int signal = SIGTERM, milliseconds timeout = milliseconds(20000));

 private:
  std::filesystem::path log_file_;
  std::unique_ptr<ChildProcess> child_;
  bool ok_ = false;
  std::string error_;
  int grpc_port_ = 0;
  int http_port_ = 0;
  std::string models_;
};

}  // namespace tessera::testing
