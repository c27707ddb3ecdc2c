// The memory of the tesserad a test started, read from /proc (issue 24's figures: VmRSS now,
// VmHWM the peak), for the hardening tests' generous bounds.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace tessera::testing {

// `field` ("VmRSS:", "VmHWM:") of /proc/PID/status in kB; 0 when unreadable.
inline long proc_status_kb(pid_t pid, const std::string& field) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  long value = 0;
  while (status >> key) {
    if (key == field) return (status >> value) ? value : 0;
    status.ignore(1 << 10, '\n');
  }
  return 0;
}

// The tesserad this test process started (its only tesserad child), -1 when none.
inline pid_t tesserad_child_pid() {
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream children(task.path() / "children");
    pid_t pid = 0;
    while (children >> pid) {
      std::error_code exe_ec;
      const auto exe = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", exe_ec);
      if (exe.filename() == "tesserad") return pid;
    }
  }
  return -1;
}

}  // namespace tessera::testing
