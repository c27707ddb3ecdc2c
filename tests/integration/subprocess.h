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
  // SIGKILL + reap when still running; in a sanitizer build SIGTERM first, so the child's exit-time
  // checks (LeakSanitizer) run. A sanitizer report in `stderr_file` then fails the current test.
  ~ChildProcess();
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
  void stop_for_good();

  pid_t pid_ = -1;
  std::filesystem::path stderr_file_;
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

// True when this binary (and so the tesserad and tessera next to it) is built with a sanitizer.
bool sanitizer_build();

// The report in a child's stderr ("AddressSanitizer", "ThreadSanitizer", UBSan's "runtime error",
// ...): from its first line, a few KiB; "" when there is none.
std::string sanitizer_report(const std::string& stderr_text);

// Reads a whole file ("" when missing).
std::string read_text_file(const std::filesystem::path& path);

}  // namespace tessera::testing
