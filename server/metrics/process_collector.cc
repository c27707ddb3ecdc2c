#include "server/metrics/process_collector.h"

#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <system_error>

namespace tessera::metrics {
namespace {

// The whole of a /proc file (their size reads as 0, so no seek-and-size).
Result<std::string> read_proc_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::unavailable("metrics: cannot open " + path.string());
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return Status::unavailable("metrics: cannot read " + path.string());
  return text;
}

// `token` as a whole unsigned decimal number, or nothing.
bool parse_u64(std::string_view token, uint64_t& out) {
  const char* end = token.data() + token.size();
  const auto [ptr, ec] = std::from_chars(token.data(), end, out);
  return ec == std::errc() && ptr == end;
}

// One gauge or counter family with a single unlabelled sample.
prometheus::MetricFamily family(const char* name, const char* help, prometheus::MetricType type, double value) {
  prometheus::MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = type;
  prometheus::ClientMetric m;
  if (type == prometheus::MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  f.metric.push_back(m);
  return f;
}

}  // namespace

Result<ProcStat> parse_proc_stat(std::string_view line) {
  const size_t paren = line.rfind(')');
  if (paren == std::string_view::npos)
    return Status::invalid_argument("metrics: no ')' after the command in /proc stat");
  // Fields 3.. (state, ppid, ...) after the command; field n is at index n - 3.
  std::vector<std::string_view> fields;
  for (size_t i = paren + 1; i < line.size();) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\n')) ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\n') ++i;
    if (i > start) fields.push_back(line.substr(start, i - start));
  }
  ProcStat s;
  if (fields.size() < 22 || !parse_u64(fields[11], s.utime_ticks) || !parse_u64(fields[12], s.stime_ticks) ||
      !parse_u64(fields[19], s.start_ticks) || !parse_u64(fields[20], s.virtual_bytes) ||
      !parse_u64(fields[21], s.resident_pages)) {
    return Status::invalid_argument("metrics: /proc stat line without utime, stime, starttime, vsize and rss");
  }
  return s;
}

Result<double> parse_boot_time(std::string_view proc_stat) {
  std::istringstream in{std::string(proc_stat)};
  std::string key, value;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    uint64_t seconds = 0;
    if (words >> key >> value && key == "btime" && parse_u64(value, seconds)) return static_cast<double>(seconds);
  }
  return Status::invalid_argument("metrics: no btime line in /proc/stat");
}

Result<ProcessFigures> read_process_figures(const std::filesystem::path& proc_pid,
                                            const std::filesystem::path& proc_stat_file) {
  Result<std::string> stat_line = read_proc_file(proc_pid / "stat");
  if (!stat_line) return stat_line.status();
  Result<ProcStat> stat = parse_proc_stat(*stat_line);
  if (!stat) return stat.status();
  Result<std::string> system_stat = read_proc_file(proc_stat_file);
  if (!system_stat) return system_stat.status();
  Result<double> boot = parse_boot_time(*system_stat);
  if (!boot) return boot.status();
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  ProcessFigures f;
  f.cpu_seconds = static_cast<double>(stat->utime_ticks + stat->stime_ticks) / ticks;
  f.resident_bytes = static_cast<double>(stat->resident_pages) * page;
  f.virtual_bytes = static_cast<double>(stat->virtual_bytes);
  f.start_time_seconds = *boot + static_cast<double>(stat->start_ticks) / ticks;
  return f;
}

Result<double> count_open_fds(const std::filesystem::path& fd_dir) {
  std::error_code ec;
  std::filesystem::directory_iterator it(fd_dir, ec);
  size_t n = 0;
  for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) ++n;
  if (ec) return Status::unavailable("metrics: cannot list " + fd_dir.string() + ": " + ec.message());
  return static_cast<double>(n);
}

std::vector<prometheus::MetricFamily> ProcessCollector::Collect() const {
  using prometheus::MetricType;
  std::vector<prometheus::MetricFamily> out;
  if (const Result<ProcessFigures> f = read_process_figures(); f.is_ok()) {
    out.push_back(family("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
                         MetricType::Counter, f->cpu_seconds));
    out.push_back(family("process_resident_memory_bytes", "Resident memory size in bytes.", MetricType::Gauge,
                         f->resident_bytes));
    out.push_back(
        family("process_virtual_memory_bytes", "Virtual memory size in bytes.", MetricType::Gauge, f->virtual_bytes));
    out.push_back(family("process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
                         MetricType::Gauge, f->start_time_seconds));
  }
  if (const Result<double> fds = count_open_fds(); fds.is_ok()) {
    out.push_back(family("process_open_fds", "Number of open file descriptors.", MetricType::Gauge, *fds));
  }
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    out.push_back(family("process_max_fds", "Maximum number of open file descriptors.", MetricType::Gauge,
                         static_cast<double>(limit.rlim_cur)));
  }
  return out;
}

}  // namespace tessera::metrics
