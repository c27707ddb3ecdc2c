// The Prometheus conventions of tesserad's /metrics (issue 25, item 3): the standard process_*
// series with the client libraries' names, types and units and sane values; tessera_build_info
// with this build's facts; a `device` label on every device series whether the daemon drives one
// device or two, so a series' identity does not change with the device count.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/http_client.h"
#include "tests/integration/raw_connection.h"
#include "tests/integration/subprocess.h"
#include "tests/integration/tesserad_process.h"

#ifndef TESSERA_BUILT_WITH_XRT
#error "tests/integration/CMakeLists.txt says whether the daemon is built with XRT"
#endif

namespace tessera::testing {
namespace {

constexpr const char* kPrlimit = "/usr/bin/prlimit";
constexpr const char* kGit = "/usr/bin/git";

// Seconds since the epoch, now.
double epoch_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Sample lines of an exposition: "name{labels}" -> value.
std::map<std::string, double> samples(const std::string& exposition) {
  std::map<std::string, double> out;
  std::istringstream in(exposition);
  for (std::string line; std::getline(in, line);) {
    const size_t space = line.rfind(' ');
    if (line.empty() || line[0] == '#' || space == std::string::npos) continue;
    out[line.substr(0, space)] = std::stod(line.substr(space + 1));
  }
  return out;
}

// Family name -> TYPE, from the "# TYPE" lines.
std::map<std::string, std::string> types(const std::string& exposition) {
  std::map<std::string, std::string> out;
  const std::regex type_line("# TYPE (\\S+) (\\S+)");
  std::istringstream in(exposition);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, type_line)) out[m[1]] = m[2];
  }
  return out;
}

// The value of one unlabelled series; NaN when absent.
double value(const std::map<std::string, double>& s, const std::string& name) {
  const auto it = s.find(name);
  return it == s.end() ? std::nan("") : it->second;
}

std::string scrape(int port) {
  const HttpReply reply = HttpClient(port).get("/metrics");
  EXPECT_EQ(reply.status, 200) << reply.error;
  return reply.body;
}

TEST(ProcessMetrics, TheClientLibrariesProcessSeriesWithSaneValues) {
  const bool prlimit = std::filesystem::exists(kPrlimit);
  std::vector<std::string> launcher;
  if (prlimit) launcher = {kPrlimit, "--nofile=700:700", "--"};  // the daemon raises soft to hard: 700
  const double before = epoch_now();
  TesseradProcess daemon({}, bundled_models_dir(), launcher);
  ASSERT_TRUE(daemon.ok()) << daemon.error();
  const double started = epoch_now();
  const std::string text = scrape(daemon.http_port());
  const std::map<std::string, std::string> expected_types = {{"process_cpu_seconds_total", "counter"},
                                                             {"process_resident_memory_bytes", "gauge"},
                                                             {"process_virtual_memory_bytes", "gauge"},
                                                             {"process_open_fds", "gauge"},
                                                             {"process_max_fds", "gauge"},
                                                             {"process_start_time_seconds", "gauge"}};
  const std::map<std::string, std::string> got_types = types(text);
  for (const auto& [name, type] : expected_types) {
    EXPECT_EQ(got_types.count(name) ? got_types.at(name) : "absent", type) << name << " in\n" << text;
  }
  const auto s = samples(text);
  // Process start: after the test began (btime has whole seconds: 1 s either way) and before it answered.
  EXPECT_GE(value(s, "process_start_time_seconds"), before - 1.5) << text;
  EXPECT_LE(value(s, "process_start_time_seconds"), started + 1.5) << text;
  EXPECT_GT(value(s, "process_resident_memory_bytes"), 1 << 20) << "a gRPC server holds more than 1 MiB";
  EXPECT_GE(value(s, "process_virtual_memory_bytes"), value(s, "process_resident_memory_bytes"));
  EXPECT_GT(value(s, "process_cpu_seconds_total"), 0) << "it loaded a model";
  EXPECT_LE(value(s, "process_cpu_seconds_total"), (epoch_now() - before) * sysconf(_SC_NPROCESSORS_ONLN) + 1);
  const double fds = value(s, "process_open_fds");
  EXPECT_GE(fds, 5) << "stdio and the gRPC and HTTP listeners";
  if (prlimit) {
    EXPECT_EQ(value(s, "process_max_fds"), 700) << text;
  }
  EXPECT_LE(fds, value(s, "process_max_fds"));

  // Twenty more connections are twenty more descriptors (each accepted before the next scrape's).
  std::vector<std::unique_ptr<RawConnection>> held;
  for (int i = 0; i < 20; ++i) {
    held.push_back(std::make_unique<RawConnection>(daemon.http_port()));
    ASSERT_TRUE(held.back()->connected());
  }
  const auto after = samples(scrape(daemon.http_port()));
  EXPECT_GE(value(after, "process_open_fds"), fds + 20);
  EXPECT_GE(value(after, "process_cpu_seconds_total"), value(s, "process_cpu_seconds_total")) << "a counter";
}

TEST(ProcessMetrics, BuildInfoNamesThisBuild) {
  TesseradProcess daemon;
  ASSERT_TRUE(daemon.ok()) << daemon.error();
  const std::string text = scrape(daemon.http_port());
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, std::regex("\ntessera_build_info\\{([^}]*)\\} (\\S+)\n"))) << text;
  EXPECT_EQ(m[2], "1");
  std::map<std::string, std::string> labels;
  const std::string label_text = m[1];
  const std::regex label("(\\w+)=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(label_text.begin(), label_text.end(), label); it != std::sregex_iterator();
       ++it) {
    labels[(*it)[1]] = (*it)[2];
  }
  EXPECT_EQ(labels.size(), 6u) << label_text;
  // `tesserad --version` says "tesserad <version> (<arch>)".
  const ProcessOutput version = run_process({TESSERAD_PATH, "--version"}, std::chrono::milliseconds(20000));
  ASSERT_EQ(version.exit_status, 0) << version.err;
  EXPECT_EQ("tesserad " + labels["version"] + " (" + labels["arch"] + ")\n", version.out);
  EXPECT_EQ(labels["xrt"], TESSERA_BUILT_WITH_XRT ? "yes" : "no");
  EXPECT_TRUE(labels["compiler"].rfind("gcc ", 0) == 0 || labels["compiler"].rfind("clang ", 0) == 0)
      << labels["compiler"];
  EXPECT_FALSE(labels["build_type"].empty());
  // The revision is a commit of this checkout (not necessarily HEAD: a commit since the build).
  const std::string& revision = labels["revision"];
  if (!std::filesystem::exists(kGit)) {
    EXPECT_TRUE(std::regex_match(revision, std::regex("[0-9a-f]{40}|unknown"))) << revision << " (no git to check it)";
    return;
  }
  const ProcessOutput inside =
      run_process({kGit, "-C", TESSERA_SOURCE_DIR, "rev-parse", "--git-dir"}, std::chrono::milliseconds(20000));
  if (inside.exit_status != 0) {
    EXPECT_EQ(revision, "unknown") << "no git checkout here: " << inside.err;
    return;
  }
  EXPECT_TRUE(std::regex_match(revision, std::regex("[0-9a-f]{40}"))) << revision;
  const ProcessOutput known = run_process({kGit, "-C", TESSERA_SOURCE_DIR, "cat-file", "-e", revision + "^{commit}"},
                                          std::chrono::milliseconds(20000));
  EXPECT_EQ(known.exit_status, 0) << revision << ": " << known.err;
}

// The device series of an exposition (those with a `device` label), as "name{labels}", with
// tessera_device_info's `name` left out: it describes the instance (an emulator's threads are
// split between instances), it is not part of the device's identity.
std::set<std::string> device_series(const std::string& exposition, const std::string& device) {
  std::set<std::string> out;
  const std::regex name_label(",name=\"[^\"]*\"");
  for (const auto& [series, v] : samples(exposition)) {
    if (series.find("device=\"" + device + "\"") != std::string::npos) {
      out.insert(std::regex_replace(series, name_label, ""));
    }
  }
  return out;
}

TEST(ProcessMetrics, DeviceSeriesKeepTheirIdentityWithOneDeviceOrTwo) {
  TesseradProcess one({"--device", "emu"});
  ASSERT_TRUE(one.ok()) << one.error();
  TesseradProcess two({"--device", "emu", "--devices", "0,1"});
  ASSERT_TRUE(two.ok()) << two.error();
  const std::string one_text = scrape(one.http_port());
  const std::string two_text = scrape(two.http_port());
  const std::set<std::string> alone = device_series(one_text, "0");
  EXPECT_EQ(alone, device_series(two_text, "0")) << one_text << "\n----\n" << two_text;
  EXPECT_EQ(device_series(two_text, "1").size(), alone.size()) << two_text;
  for (const char* family : {"tessera_device_info", "tessera_device_errors_total", "tessera_device_images_total",
                             "tessera_device_serving", "tessera_energy_joules_total", "tessera_power_watts",
                             "tessera_temperature_celsius", "tessera_fabric_utilization_ratio"}) {
    const std::regex unlabelled("\n" + std::string(family) + "(\\{(?![^}]*device=)[^}]*\\})? ");
    EXPECT_FALSE(std::regex_search(one_text, unlabelled)) << family << " without a device label:\n" << one_text;
    EXPECT_NE(one_text.find("\n" + std::string(family) + "{"), std::string::npos) << family << " missing";
  }
}

}  // namespace
}  // namespace tessera::testing
