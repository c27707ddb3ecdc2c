// The standard process_* series every Prometheus client library exports (client_golang's and
// client_python's process collectors: the same names, types and units), read from /proc at each
// scrape. prometheus-cpp 1.0 (Debian 12's prometheus-cpp-dev) has no such collector: its core
// offers the registry, the families and the Collectable interface only, so this is a small
// Collectable of our own.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <cstdint>
#include <filesystem>
#include <string_view>
#include <vector>

#include "accel/common/status.h"

namespace tessera::metrics {

// The fields of /proc/<pid>/stat the collector needs, in the kernel's units (proc(5)).
struct ProcStat {
  uint64_t utime_ticks = 0;     // field 14, clock ticks in user mode
  uint64_t stime_ticks = 0;     // field 15, clock ticks in kernel mode
  uint64_t start_ticks = 0;     // field 22, clock ticks after boot the process started
  uint64_t virtual_bytes = 0;   // field 23, vsize
  uint64_t resident_pages = 0;  // field 24, rss
};

// The fields of a /proc/<pid>/stat line. The command name (field 2) may hold spaces and ')': the
// fields are counted from its last ')'. INVALID_ARGUMENT when the line is not one.
Result<ProcStat> parse_proc_stat(std::string_view line);

// The boot time (seconds since the epoch) from /proc/stat's "btime" line; INVALID_ARGUMENT without one.
Result<double> parse_boot_time(std::string_view proc_stat);

// What the process collector reports, in Prometheus' base units (seconds, bytes).
struct ProcessFigures {
  double cpu_seconds = 0;         // process_cpu_seconds_total: user + system
  double resident_bytes = 0;      // process_resident_memory_bytes
  double virtual_bytes = 0;       // process_virtual_memory_bytes
  double start_time_seconds = 0;  // process_start_time_seconds, since the epoch
};

// The figures of the process whose /proc folder is `proc_pid` (/proc/self for this one), with
// /proc/stat at `proc_stat_file`.
Result<ProcessFigures> read_process_figures(const std::filesystem::path& proc_pid = "/proc/self",
                                            const std::filesystem::path& proc_stat_file = "/proc/stat");

// The number of entries of `fd_dir` (/proc/self/fd: the open file descriptors, the one that
// lists them included, as client_golang counts them).
Result<double> count_open_fds(const std::filesystem::path& fd_dir = "/proc/self/fd");

// process_cpu_seconds_total, process_resident_memory_bytes, process_virtual_memory_bytes,
// process_start_time_seconds (from /proc/self/stat), process_open_fds (/proc/self/fd) and
// process_max_fds (the soft RLIMIT_NOFILE). A figure that cannot be read at a scrape (out of file
// descriptors, no /proc) is left out of that scrape rather than reported wrong.
class ProcessCollector : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override;
};

}  // namespace tessera::metrics
