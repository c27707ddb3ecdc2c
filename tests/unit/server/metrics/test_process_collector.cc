// The process_* collector: /proc/<pid>/stat and /proc/stat parsed as proc(5) lays them out (a
// command name with spaces and parentheses, malformed lines refused), the figures in Prometheus'
// base units from a fake /proc, and the real /proc/self through the collector.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>

#include "server/metrics/exposition.h"
#include "server/metrics/process_collector.h"

namespace tessera::metrics {
namespace {

// A /proc/<pid>/stat line of proc(5)'s 52 fields; utime 250, stime 150, starttime 12345,
// vsize 104857600, rss 2560 pages. The command "(a b) c" has spaces and a ')'.
const char* kStatLine =
    "4242 ((a b) c) S 1 4242 4242 0 -1 4194560 1200 0 3 0 250 150 0 0 20 0 9 0 12345 104857600 2560 "
    "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n";

TEST(ProcessCollector, ParsesTheStatLineFromTheCommandsLastParenthesis) {
  const Result<ProcStat> s = parse_proc_stat(kStatLine);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ(s->utime_ticks, 250u);
  EXPECT_EQ(s->stime_ticks, 150u);
  EXPECT_EQ(s->start_ticks, 12345u);
  EXPECT_EQ(s->virtual_bytes, 104857600u);
  EXPECT_EQ(s->resident_pages, 2560u);
}

TEST(ProcessCollector, RefusesMalformedStatLines) {
  for (const char* bad : {"", "4242 no parenthesis S 1 2 3", "4242 (x) S 1 2 3 4 5",
                          "4242 (x) S 1 4242 4242 0 -1 4194560 1200 0 3 0 -250 150 0 0 20 0 9 0 12345 1 2",
                          "4242 (x) S 1 4242 4242 0 -1 4194560 1200 0 3 0 250 150 0 0 20 0 9 0 12345 1 2x"}) {
    const Result<ProcStat> s = parse_proc_stat(bad);
    EXPECT_FALSE(s.is_ok()) << bad;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(ProcessCollector, BootTimeFromTheBtimeLine) {
  EXPECT_EQ(*parse_boot_time("cpu  1 2 3\nintr 5\nbtime 1700000000\nprocesses 9\n"), 1700000000.0);
  EXPECT_FALSE(parse_boot_time("cpu  1 2 3\nprocesses 9\n").is_ok());
  EXPECT_FALSE(parse_boot_time("btime soon\n").is_ok());
}

// A temporary folder standing for /proc, removed at the end.
struct FakeProc {
  std::filesystem::path root = std::filesystem::temp_directory_path() / ("tessera-proc-" + std::to_string(getpid()) +
                                                                         "-" + std::to_string(std::random_device{}()));
  FakeProc() { std::filesystem::create_directories(root / "self" / "fd"); }
  ~FakeProc() {
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
  }
  void write(const std::string& name, const std::string& text) const { std::ofstream(root / name) << text; }
};

TEST(ProcessCollector, FiguresInSecondsAndBytes) {
  FakeProc proc;
  proc.write("self/stat", kStatLine);
  proc.write("stat", "cpu 1 2 3\nbtime 1700000000\n");
  const Result<ProcessFigures> f = read_process_figures(proc.root / "self", proc.root / "stat");
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  EXPECT_DOUBLE_EQ(f->cpu_seconds, 400 / ticks);
  EXPECT_DOUBLE_EQ(f->resident_bytes, 2560 * page);
  EXPECT_DOUBLE_EQ(f->virtual_bytes, 104857600.0);
  EXPECT_DOUBLE_EQ(f->start_time_seconds, 1700000000 + 12345 / ticks);

  proc.write("stat", "cpu 1 2 3\n");
  EXPECT_FALSE(read_process_figures(proc.root / "self", proc.root / "stat").is_ok()) << "no btime";
  EXPECT_FALSE(read_process_figures(proc.root / "missing", proc.root / "stat").is_ok()) << "no such process";
}

TEST(ProcessCollector, CountsTheEntriesOfTheFdFolder) {
  FakeProc proc;
  for (const char* fd : {"0", "1", "2", "7"}) proc.write(std::string("self/fd/") + fd, "");
  EXPECT_EQ(*count_open_fds(proc.root / "self" / "fd"), 4.0);
  EXPECT_EQ(count_open_fds(proc.root / "none").status().code(), StatusCode::kUnavailable);
}

// The unlabelled samples of `exposition`, name -> value.
std::map<std::string, double> samples(const std::string& exposition) {
  std::map<std::string, double> out;
  std::istringstream in(exposition);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.find(' ');
    out[line.substr(0, space)] = std::stod(line.substr(space + 1));
  }
  return out;
}

TEST(ProcessCollector, ReportsThisProcess) {
  ProcessCollector collector;
  const auto before = samples(expose(collector));
  ASSERT_EQ(before.size(), 6u) << expose(collector);
  rlimit limit{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &limit), 0);
  EXPECT_EQ(before.at("process_max_fds"), static_cast<double>(limit.rlim_cur));
#ifdef TESSERA_UNDER_QEMU_USER
  // qemu-user answers /proc/self/stat itself, with rss 0; a board's kernel gives the real figure.
  EXPECT_GE(before.at("process_resident_memory_bytes"), 0);
#else
  EXPECT_GT(before.at("process_resident_memory_bytes"), 0);
#endif
  EXPECT_GE(before.at("process_virtual_memory_bytes"), before.at("process_resident_memory_bytes"));
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_LE(before.at("process_start_time_seconds"), now + 1.5) << "started before now";
  EXPECT_GT(before.at("process_start_time_seconds"), now - 24 * 3600) << "a unit test run is younger than a day";

  // Three more descriptors are three more open fds.
  int fds[3];
  for (int& fd : fds) fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const auto after = samples(expose(collector));
  for (const int fd : fds) close(fd);
  EXPECT_EQ(after.at("process_open_fds"), before.at("process_open_fds") + 3);
  EXPECT_GE(after.at("process_cpu_seconds_total"), before.at("process_cpu_seconds_total"));
}

}  // namespace
}  // namespace tessera::metrics
