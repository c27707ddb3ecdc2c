// tesserad: serves the models in --models over gRPC and HTTP until SIGINT/SIGTERM. Settings come
// from flags and an optional TOML config file (--config), flags winning (flags.h).
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <pthread.h>
#include <csignal>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>

#include "accel/plan/plan_cache.h"
#include "server/daemon/daemon.h"
#include "server/daemon/fd_limit.h"
#include "server/daemon/flags.h"
#include "server/daemon/logging.h"

namespace {

namespace fs = std::filesystem;

// The web UI's built site (web/CMakeLists.txt: only the page's own files): <prefix>/share/tessera/web
// beside <prefix>/bin/tesserad, in an installed tree and in a build tree alike. Never the source
// folder web/, which holds files that are not the site's (README.md, package.json, ...).
fs::path default_web_root(const char* argv0) {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) exe = fs::absolute(argv0, ec);
  return (exe.parent_path() / ".." / "share" / "tessera" / "web").lexically_normal();
}

int run_daemon(int argc, char** argv) {
  tessera::DaemonOptions options;
  options.web_root = default_web_root(argv[0]);
  options.plan_cache = tessera::plan::default_plan_cache_dir();
  std::string log_level = "info";
  std::vector<tessera::DaemonFlag> flags = tessera::daemon_flags(options, log_level);

  const fs::path config_file = tessera::find_config_flag(argc, argv);
  if (!config_file.empty()) {
    if (tessera::Status s = tessera::apply_config_file(config_file, flags); !s.is_ok()) {
      std::fprintf(stderr, "tesserad: bad config: %s\n", s.message().c_str());
      return 1;
    }
  }
  CLI::App app{"tesserad: the Tessera inference daemon (gRPC + HTTP + web UI)"};
  std::string config_flag;
  app.add_option("--config", config_flag,
                 "TOML file with any of the settings below as top-level keys (grpc-port = 50051); flags override it");
  tessera::add_daemon_flags(app, flags);
  // The version and the CPU it was built for: the board packaging test runs it under qemu.
  app.set_version_flag("--version", "tesserad " TESSERA_VERSION " (" TESSERA_SYSTEM_PROCESSOR ")");
  CLI11_PARSE(app, argc, argv);

  if (tessera::Status s = tessera::configure_logging(log_level, options.log_format); !s.is_ok()) {
    std::fprintf(stderr, "tesserad: %s\n", s.message().c_str());
    return 1;
  }
  if (!config_file.empty()) spdlog::info("config {}", config_file.string());
  // Every connection is a descriptor: take all the hard limit allows (the HTTP bound follows it).
  const tessera::FdLimitChange fds = tessera::raise_fd_limit();
  if (fds.after != fds.before) {
    spdlog::info("file descriptors: soft limit raised from {} to the hard limit {}", fds.before, fds.after);
  }

  // Every thread started from here on inherits the blocked signals; only sigwait sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  auto daemon = tessera::Daemon::start(options);
  if (!daemon) {
    spdlog::error("cannot start: {}", daemon.status().to_string());
    return 1;
  }
  spdlog::info("web root {}", options.web_root.string());
  std::cout << (*daemon)->listening_line() << std::endl;  // tests parse this line

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  spdlog::info("{}: draining (up to {} s), then exiting", signal_number == SIGINT ? "SIGINT" : "SIGTERM",
               options.drain_timeout_s);
  (*daemon)->stop();
  spdlog::info("stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run_daemon(argc, argv);
  } catch (const std::exception& e) {
    // Daemon::start and the servers report errors as Status; this is the last line of defence.
    std::fprintf(stderr, "tesserad: unexpected error: %s\n", e.what());
    return 1;
  } catch (...) {
    std::fprintf(stderr, "tesserad: unexpected error\n");
    return 1;
  }
}
