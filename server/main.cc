// tesserad: serves the models in --models over gRPC and HTTP until SIGINT/SIGTERM.
#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <filesystem>
#include <iostream>
#include <pthread.h>

#include "server/daemon.h"

namespace {

namespace fs = std::filesystem;

// <dir of the binary>/../../web (build/bin/tesserad -> web/) when it exists, else ./web.
fs::path default_web_root(const char* argv0) {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) exe = fs::absolute(argv0, ec);
  const fs::path beside = exe.parent_path() / ".." / ".." / "web";
  if (fs::is_directory(beside, ec)) return beside.lexically_normal();
  return "web";
}

}  // namespace

int main(int argc, char** argv) {
  tessera::DaemonOptions options;
  std::string log_level = "info";
  std::string web_root;

  CLI::App app{"tesserad: the Tessera inference daemon (gRPC + HTTP + web UI)"};
  app.add_option("--models", options.models_dir, "Model repository: one subfolder with a model.toml per model")
      ->capture_default_str();
  app.add_option("--grpc-port", options.grpc_port, "gRPC port (0 = pick a free one)")
      ->capture_default_str()->check(CLI::Range(0, 65535));
  app.add_option("--http-port", options.http_port, "HTTP port (0 = pick a free one)")
      ->capture_default_str()->check(CLI::Range(0, 65535));
  app.add_option("--listen", options.listen, "Address both servers listen on")->capture_default_str();
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, critical or off")
      ->capture_default_str()
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  app.add_option("--max-image-bytes", options.max_image_bytes, "Largest accepted image (encoded bytes)")
      ->capture_default_str()->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  app.add_option("--web-root", web_root, "Static files of the web UI (default: <binary>/../../web, else ./web)");
  app.add_option("--workers", options.workers, "Inference threads")
      ->capture_default_str()->check(CLI::Range(1, 256));
  app.add_option("--max-queue", options.max_queue, "Requests waiting for a worker before RESOURCE_EXHAUSTED")
      ->capture_default_str()->check(CLI::Range(size_t{1}, size_t{1} << 20));
  app.add_option("--precision", options.precision, "int8: conv layers on the fabric (or its emulator), FC on the host; "
                 "fp32: everything on the host's float path")
      ->capture_default_str()->check(CLI::IsMember({"int8", "fp32"}));
  app.add_option("--device", options.device.kind, "Where the fabric part runs: " + tessera::device_kinds() +
                 " (auto: a Xilinx board when one and an xclbin are there, else the emulator)")
      ->capture_default_str();
  app.add_option("--xclbin", options.device.xclbin, "Accelerator binary for --device xrt/auto (else $TESSERA_XCLBIN)");
  app.add_option("--board", options.device.board, "Board profile of the emulator's timing model")->capture_default_str();
  app.add_option("--max-batch", options.max_batch, "Images per device run")
      ->capture_default_str()->check(CLI::Range(1u, 256u));
  CLI11_PARSE(app, argc, argv);

  auto logger = spdlog::stderr_color_mt("tesserad");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(log_level));
  options.web_root = web_root.empty() ? default_web_root(argv[0]) : fs::path(web_root);

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
  spdlog::info("{}: shutting down", signal_number == SIGINT ? "SIGINT" : "SIGTERM");
  (*daemon)->stop();
  spdlog::info("stopped");
  return 0;
}
