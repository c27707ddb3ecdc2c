// A process's figures from /proc/PID/status (the memory of the tesserad a test started, by
// TesseradProcess::pid(): VmRSS now, VmHWM the peak), for the tests' generous bounds.
#pragma once

#include <sys/types.h>

#include <fstream>
#include <string>

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

}  // namespace tessera::testing
