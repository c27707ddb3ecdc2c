// Child processes for the integration tests: RAII (killed on destruction), every wait bounded.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace tessera::testing {

using std::chrono::milliseconds;

class ChildProcess {
 public:
  // Starts argv[0] with its stdout on a pipe we read and its stderr appended to `stderr_file`
  // (inherited when empty). The child is SIGKILLed if this process dies.
  ChildProcess(const std::vector<std::string>& argv, const std::filesystem::path& stderr_file = {});
  ~ChildProcess();  // SIGKILL + reap when still running
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  // The next stdout line (without '\n'); nullopt on timeout or EOF.
  std::optional<std::string> read_line(milliseconds timeout);
  // Everything the child writes to stdout until it closes it; nullopt on timeout.
  std::optional<std::string> read_all(milliseconds timeout);

  void send_signal(int signal);
  // The exit status once the child exits: exit code, or 128 + signal; nullopt on timeout.
  std::optional<int> wait(milliseconds timeout);

 private:
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string pending_;  // read but not yet returned
  std::optional<int> exit_status_;
};

struct ProcessOutput {
  int exit_status = -1;  // -1: timed out (and killed)
  std::string out;
  std::string err;
};

// Runs a command to completion (killed after `timeout`), capturing stdout and stderr.
ProcessOutput run_process(const std::vector<std::string>& argv, milliseconds timeout);

// Reads a whole file ("" when missing).
std::string read_text_file(const std::filesystem::path& path);

}  // namespace tessera::testing
