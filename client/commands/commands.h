// The CLI's subcommands: each registers its flags on the app and runs once parsed.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "client/commands/common.h"
#include "client/commands/protocol_options.h"

namespace tessera::client {

struct ClassifyArgs {
  Connection connection;
  ProtocolOptions protocol;
  std::string model;  // empty: the daemon's default
  unsigned top_k = 5;
  bool json = false;  // one JSON object per image per line
  std::string csv;    // a CSV file to write (one row per image); "" for none
  double timeout_s = 30;
  std::vector<std::string> images;  // files and directories (expanded: jpg/jpeg/png, sorted)
};

struct ModelsArgs {
  Connection connection;
  std::string action = "list";  // list | index | load | unload
  std::string name;             // load, unload: the model
  bool json = false;
  double timeout_s = 10;
};

struct BenchArgs {
  Connection connection;
  ProtocolOptions protocol;
  std::string model;   // empty: the daemon's default
  std::string images;  // folder of images; "" = <models-dir>/<model>/calibration
  std::string models_dir = "models";
  unsigned concurrency = 0;          // closed loop: requests (unary) or streams (stream) in flight; 0 = 1
  double rate = 0;                   // open loop: requests per second; 0 = closed loop
  std::string arrivals = "poisson";  // open loop spacing: "poisson" or "fixed"
  unsigned max_outstanding = 256;    // open loop: arrivals beyond this many in flight are dropped
  double duration_s = 0;             // measured seconds; 0 with requests == 0 means 10
  uint64_t requests = 0;             // measured requests; 0 = by duration
  double warmup_s = 0;
  double max_seconds = 600;  // hard cap on the measured phase
  std::string mode = "unary";
  std::string grpc_client = "queue";  // unary tessera.v1: "queue" (polled by the sender) or "callback"
  unsigned top_k = 1;
  double timeout_s = 10;  // per-request deadline
  double window_s = 1;
  std::string csv;  // per-window rows
  bool json = false;
};

struct WatchArgs {
  Connection connection;
  unsigned interval_ms = 1000;
  unsigned count = 0;  // 0 = until Ctrl-C
  bool json = false;
};

struct FleetArgs {
  Connection connection;  // TLS and token for every target; `server` unused
  std::vector<std::string> targets;
  std::string targets_file;
  unsigned timeout_ms = 1000;
  double interval_s = 2;
  bool once = false;
  bool json = false;
};

struct EvalArgs {
  std::string model_dir;
  std::string dataset = "fashion-mnist";
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  std::string precision = "int8";
  std::string device = "auto";
  std::string xclbin;
  int limit = 0;
  int batch = 64;
  bool json = false;         // the result as one JSON object on stdout
  bool no_progress = false;  // no progress bar even on a terminal (--no-progress, --quiet)
};

struct PlanArgs {
  std::string model;             // a model folder (with model.toml) or an .onnx file
  std::string board = "zcu102";  // a board profile's name, or "all"
  bool json = false;
  std::string compare;   // "", "naive" or "noburst"
  std::string roofline;  // SVG file to write; "" for none
  std::string space = "kernel";
  std::string objective = "energy";
  std::string plan_cache;  // "" = plan::default_plan_cache_dir()
  bool no_plan_cache = false;
};

CLI::App* add_classify_command(CLI::App& app, ClassifyArgs& args);
CLI::App* add_models_command(CLI::App& app, ModelsArgs& args);
CLI::App* add_eval_command(CLI::App& app, EvalArgs& args);
CLI::App* add_plan_command(CLI::App& app, PlanArgs& args);
CLI::App* add_bench_command(CLI::App& app, BenchArgs& args);
CLI::App* add_watch_command(CLI::App& app, WatchArgs& args);
CLI::App* add_fleet_command(CLI::App& app, FleetArgs& args);

// Exit codes: 0 when everything succeeded, 1 otherwise; 2 for a command line that does not parse
// or asks for what cannot be done (main.cc, and the checks after parsing).
inline constexpr int kUsageError = 2;
int run_classify(const ClassifyArgs& args);
int run_models(const ModelsArgs& args);
int run_eval(const EvalArgs& args);
int run_plan(const PlanArgs& args);
// bench: 0 when the run finished and at least one request succeeded, 1 otherwise.
int run_bench(const BenchArgs& args);
// watch: 0 after --count snapshots or Ctrl-C, 1 when the stream failed.
int run_watch(const WatchArgs& args);
// fleet: 0 when at least one target answered (in the last refresh), 1 when none did.
int run_fleet(const FleetArgs& args);

}  // namespace tessera::client
