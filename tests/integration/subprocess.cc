#include "tests/integration/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <fstream>
#include <iterator>
#include <random>
#include <thread>
#include <utility>

namespace tessera::testing {
namespace {

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

}  // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::filesystem::path& stderr_file)
    : stderr_file_(stderr_file) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return;
  int err_fd = -1;
  if (!stderr_file.empty()) {
    err_fd = open(stderr_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  }
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = getpid();

  pid_ = fork();
  if (pid_ == 0) {
    // Child: only async-signal-safe calls until exec.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    dup2(fds[1], STDOUT_FILENO);
    if (err_fd >= 0) dup2(err_fd, STDERR_FILENO);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  if (err_fd >= 0) close(err_fd);
  if (pid_ < 0) {
    close(fds[0]);
    return;
  }
  stdout_fd_ = fds[0];
}

ChildProcess::~ChildProcess() {
  stop_for_good();
  if (stdout_fd_ >= 0) close(stdout_fd_);
  if (stderr_file_.empty() || !sanitizer_build()) return;
  if (const std::string report = sanitizer_report(read_text_file(stderr_file_)); !report.empty()) {
    ADD_FAILURE() << "child process " << pid_ << " wrote a sanitizer report:\n" << report;
  }
}

void ChildProcess::stop_for_good() {
  if (pid_ <= 0 || exit_status_) return;
  // A sanitized child checks for leaks when it exits, not when it is killed: ask it to stop first.
  // The pipe may be full of unread output the child blocks on, so it is drained while waiting.
  if (sanitizer_build()) {
    kill(pid_, SIGTERM);
    const auto deadline = Clock::now() + milliseconds(10000);
    while (!wait(milliseconds(50)) && Clock::now() < deadline) {
      pollfd p{stdout_fd_, POLLIN, 0};
      char buf[4096];
      if (stdout_fd_ >= 0 && poll(&p, 1, 0) > 0 && read(stdout_fd_, buf, sizeof buf) <= 0) {
        close(std::exchange(stdout_fd_, -1));
      }
    }
    if (exit_status_) return;
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
}

std::optional<std::string> ChildProcess::read_line(milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (const size_t nl = pending_.find('\n'); nl != std::string::npos) {
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return line;
    }
    if (stdout_fd_ < 0) return std::nullopt;
    pollfd p{stdout_fd_, POLLIN, 0};
    const int ready = poll(&p, 1, remaining_ms(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return std::nullopt;
    char buf[4096];
    const ssize_t n = read(stdout_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    pending_.append(buf, static_cast<size_t>(n));
  }
}

std::optional<std::string> ChildProcess::read_all(milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (stdout_fd_ >= 0) {
    pollfd p{stdout_fd_, POLLIN, 0};
    const int ready = poll(&p, 1, remaining_ms(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return std::nullopt;
    char buf[4096];
    const ssize_t n = read(stdout_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending_.append(buf, static_cast<size_t>(n));
  }
  return std::exchange(pending_, {});
}

void ChildProcess::send_signal(int signal) {
  if (pid_ > 0 && !exit_status_) kill(pid_, signal);
}

std::optional<int> ChildProcess::wait(milliseconds timeout) {
  if (exit_status_ || pid_ <= 0) return exit_status_;
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return exit_status_;
    }
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(milliseconds(10));
  }
}

ProcessOutput run_process(const std::vector<std::string>& argv, milliseconds timeout) {
  const auto err_file = std::filesystem::temp_directory_path() / ("tessera-test-" + std::to_string(getpid()) + "-" +
                                                                  std::to_string(std::random_device{}()) + ".err");
  ProcessOutput result;
  {
    ChildProcess child(argv, err_file);
    auto out = child.read_all(timeout);
    auto status = out ? child.wait(timeout) : std::nullopt;
    result.out = out.value_or("");
    result.exit_status = status.value_or(-1);
  }  // a child still running here is killed
  result.err = read_text_file(err_file);
  std::error_code ec;
  std::filesystem::remove(err_file, ec);
  return result;
}

bool sanitizer_build() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

std::string sanitizer_report(const std::string& stderr_text) {
  // Every sanitizer report names its tool in its first line ("==123==ERROR: AddressSanitizer:",
  // "WARNING: ThreadSanitizer:", "ERROR: LeakSanitizer:"); UBSan's starts "file:line:col: runtime error:".
  size_t first = std::string::npos;
  for (const char* marker : {"Sanitizer:", ": runtime error: "}) first = std::min(first, stderr_text.find(marker));
  if (first == std::string::npos) return {};
  const size_t line_start = stderr_text.rfind('\n', first);
  const size_t begin = line_start == std::string::npos ? 0 : line_start + 1;
  constexpr size_t kReportBytes = 6000;
  return stderr_text.substr(begin, kReportBytes);
}

std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace tessera::testing
