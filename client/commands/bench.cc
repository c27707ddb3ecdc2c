// tessera bench: load against tesserad from a folder of images, closed loop (N in flight) or
// open loop (a rate, Poisson or evenly spaced, with a bound on requests in flight), unary or
// streaming; a live progress line; a report of client latency, the server's breakdown, server
// overhead and power per image. The load: bench_load.h; the report: bench_report.h.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <thread>
#include <vector>

#include "client/commands/bench_load.h"
#include "client/commands/bench_report.h"
#include "client/commands/bench_senders.h"
#include "client/commands/bench_stats.h"
#include "client/commands/commands.h"
#include "client/commands/common.h"
#include "client/kserve/kserve_transport.h"

namespace tessera::client {
namespace {

// The model to benchmark: --model, else the daemon's default (its first model); nullopt (said on
// stderr) when the daemon does not answer.
std::optional<std::string> preflight_model(v1::Classifier::Stub& classifier, const BenchArgs& args) {
  std::string model = args.model;
  grpc::ClientContext context;
  prepare_context(context, args.connection, std::chrono::seconds(5));
  v1::ListModelsResponse models;
  const grpc::Status status = classifier.ListModels(&context, v1::ListModelsRequest(), &models);
  if (!status.ok()) {
    std::cerr << "tessera bench: " << args.connection.server << ": " << grpc_code_name(status.error_code()) << ": "
              << status.error_message() << "\n";
    return std::nullopt;
  }
  if (model.empty() && models.models_size() > 0) model = models.models(0).name();
  return model;
}

// The images to send: --images, else <models-dir>/<model>/calibration.
bool load_images(const BenchArgs& args, const std::string& model, std::vector<BenchImage>& images, std::string& dir) {
  dir = args.images;
  if (dir.empty()) {
    dir = (std::filesystem::path(args.models_dir) / model / "calibration").string();
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) {
      std::cerr << "tessera bench: --images DIR is required (no " << dir << ")\n";
      return false;
    }
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    std::cerr << "tessera bench: " << dir << " is not a folder\n";
    return false;
  }
  for (const auto& path : list_images(dir)) {
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) {
      std::cerr << "tessera bench: cannot read " << path.string() << "\n";
      return false;
    }
    images.push_back({path.string(), std::move(bytes), {}});
  }
  if (images.empty()) {
    std::cerr << "tessera bench: no .jpg/.jpeg/.png files in " << dir << "\n";
    return false;
  }
  return true;
}

std::optional<v1::TelemetrySnapshot> get_telemetry(v1::Telemetry::Stub& stub, const Connection& connection) {
  grpc::ClientContext context;
  prepare_context(context, connection, std::chrono::seconds(5));
  v1::TelemetrySnapshot snapshot;
  if (!stub.GetTelemetry(&context, v1::GetTelemetryRequest(), &snapshot).ok()) return std::nullopt;
  return snapshot;
}

BenchCallOptions call_options(const BenchArgs& args) {
  BenchCallOptions options;
  options.model = args.model;
  options.top_k = args.top_k;
  options.timeout = seconds_to_us(args.timeout_s);
  return options;
}

kserve::HttpTensorFormat http_format(const ProtocolOptions& p) {
  return {p.input_tensor_format == "binary", p.output_tensor_format == "binary"};
}

// KServe's preflight: the server answers and which model, its metadata (the input's form), then
// each image as its request input; nullopt (said on stderr) when any of it fails.
std::optional<kserve::ModelPlan> kserve_preflight(const BenchArgs& args,
                                                  const std::shared_ptr<grpc::Channel>& channel) {
  const ProtocolOptions& p = args.protocol;
  std::unique_ptr<kserve::KserveTransport> transport =
      p.http() ? kserve::make_http_transport(args.connection, http_format(p))
               : kserve::make_grpc_transport(args.connection, channel);
  kserve::ModelPlan plan;
  const grpc::Status status = kserve::plan_model(*transport, {args.model, "", p.input_format, p.preprocess}, plan);
  if (!status.ok()) {
    std::cerr << "tessera bench: " << args.connection.server << ": " << grpc_code_name(status.error_code()) << ": "
              << status.error_message() << "\n";
    return std::nullopt;
  }
  return plan;
}

// Each image's KServe input, made once before the run; false (said on stderr) when one cannot be.
bool make_inputs(const kserve::ModelPlan& plan, std::vector<BenchImage>& images) {
  for (BenchImage& image : images) {
    auto input = kserve::make_input(plan, image.bytes);
    if (!input) {
      std::cerr << "tessera bench: " << image.path << ": " << input.status().to_string() << "\n";
      return false;
    }
    image.input = std::move(input).value();
  }
  return true;
}

// HTTP threads (connections): one per request in flight; open loop, up to 64 of --max-outstanding.
unsigned http_connections(const BenchArgs& args, const BenchRunShape& shape) {
  return shape.open_loop ? std::min(args.max_outstanding, 64u) : shape.slots;
}

std::unique_ptr<BenchSender> make_sender(const BenchArgs& args, const BenchRunShape& shape,
                                         const std::shared_ptr<grpc::Channel>& channel,
                                         const std::optional<kserve::ModelPlan>& plan) {
  const BenchCallOptions options = call_options(args);
  if (plan) {
    if (args.protocol.http())
      return make_kserve_http_sender(args.connection, http_format(args.protocol), options, *plan,
                                     http_connections(args, shape));
    return shape.stream ? make_kserve_stream_sender(args.connection, channel, options, *plan, shape.slots)
                        : make_kserve_grpc_sender(args.connection, channel, options, *plan);
  }
  if (shape.stream) return make_stream_sender(args.connection, channel, options, shape.slots);
  return args.grpc_client == "callback" ? make_unary_sender(args.connection, channel, options)
                                        : make_unary_queue_sender(args.connection, channel, options);
}

// Writes the CSV (when asked) and prints the report; the exit code.
int emit_report(const BenchArgs& args, const nlohmann::json& report, const std::vector<BenchWindow>& windows) {
  const uint64_t ok = report["requests"]["ok"].get<uint64_t>();
  int exit_code = ok > 0 ? 0 : 1;
  if (!args.csv.empty() && !write_bench_csv(args.csv, windows)) exit_code = 1;
  if (args.json) {
    std::cout << report.dump(2) << "\n";
  } else {
    print_bench_report(report);
  }
  std::cout.flush();
  if (ok == 0) std::cerr << "tessera bench: no request succeeded\n";
  return exit_code;
}

}  // namespace

CLI::App* add_bench_command(CLI::App& app, BenchArgs& args) {
  CLI::App* cmd = app.add_subcommand("bench", "Load-test tesserad with a folder of images");
  add_connection_options(cmd, args.connection);
  add_protocol_options(cmd, args.protocol, args.connection);
  cmd->add_option("-m,--model", args.model,
                  "Model name (default: the daemon's default model; KServe: the first READY model)");
  cmd->add_option("--images", args.images,
                  "Folder of .jpg/.jpeg/.png images (default: <models-dir>/<model>/calibration)");
  cmd->add_option("--models-dir", args.models_dir, "Where the default image folder is looked up")
      ->capture_default_str();
  cmd->add_option("--concurrency", args.concurrency,
                  "Closed loop: requests in flight (unary) or streams (stream, one request in flight each); "
                  "open loop with --mode stream: streams the arrivals are spread over")
      ->check(CLI::Range(1u, 10000u));
  cmd->add_option("--rate", args.rate, "Open loop: requests per second")->check(CLI::PositiveNumber);
  cmd->add_option("--arrivals", args.arrivals, "Open loop spacing")
      ->check(CLI::IsMember({"poisson", "fixed"}))
      ->capture_default_str();
  cmd->add_option("--max-outstanding", args.max_outstanding,
                  "Open loop: arrivals while this many are in flight are dropped (counted)")
      ->check(CLI::Range(1u, 1000000u))
      ->capture_default_str();
  cmd->add_option("--duration", args.duration_s, "Seconds to measure (default 10 unless --requests)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--requests", args.requests, "Requests to measure")
      ->check(CLI::Range(uint64_t{1}, uint64_t{100000000}));
  cmd->add_option("--warmup", args.warmup_s, "Seconds of unmeasured load first")->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-seconds", args.max_seconds, "Hard cap on the measured phase, seconds")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option(
         "--mode", args.mode,
         "unary: Classify (KServe: ModelInfer) calls; stream: ClassifyStream (KServe: ModelStreamInfer; gRPC only)")
      ->check(CLI::IsMember({"unary", "stream"}))
      ->capture_default_str();
  cmd->add_option("--grpc-client", args.grpc_client,
                  "Unary Classify's client: queue (a completion queue the sending thread polls; no hand-off "
                  "between threads) or callback (gRPC's callback API, answers on gRPC's threads)")
      ->check(CLI::IsMember({"queue", "callback"}))
      ->capture_default_str();
  cmd->add_option("--top-k", args.top_k, "Classes asked per image")
      ->check(CLI::Range(1u, 100000u))
      ->capture_default_str();
  cmd->add_option("--timeout", args.timeout_s, "Seconds each request may take")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--window", args.window_s, "Seconds per --csv row")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--csv", args.csv, "Write one row per window: time, requests, rps, p50, p99, errors");
  cmd->add_flag("--json", args.json, "Print the report as JSON");
  return cmd;
}

int run_bench(const BenchArgs& args) {
  if (args.protocol.http() && args.mode == "stream") {
    std::cerr << "tessera bench: --mode stream is gRPC's (ClassifyStream, KServe's ModelStreamInfer), not -i http\n";
    return kUsageError;
  }
  install_interrupt_handler();
  // gRPC only: with -i http the channel is never used (it connects lazily).
  std::shared_ptr<grpc::Channel> channel = make_channel(args.connection);
  auto classifier = v1::Classifier::NewStub(channel);
  auto telemetry = v1::Telemetry::NewStub(channel);

  // Preflight: the daemon answers, and which model is the default.
  std::optional<kserve::ModelPlan> plan;
  BenchRunInfo run;
  if (args.protocol.kserve()) {
    plan = kserve_preflight(args, channel);
    if (!plan) return 1;
    run.model = plan->model;
    run.input_datatype = plan->datatype;
  } else {
    const std::optional<std::string> model = preflight_model(*classifier, args);
    if (!model) return 1;
    run.model = *model;
  }
  std::vector<BenchImage> images;
  if (!load_images(args, run.model, images, run.images_dir)) return 1;
  if (plan && !make_inputs(*plan, images)) return 1;
  run.images = images.size();
  for (const BenchImage& image : images) run.image_paths.push_back(image.path);
  run.shape = bench_run_shape(args);
  std::unique_ptr<BenchSender> sender = make_sender(args, run.shape, channel, plan);

  const BenchTimeline timeline = bench_timeline(std::chrono::steady_clock::now(), args.warmup_s, run.shape.cap_s);
  BenchLoad load(args, run.shape, timeline, images, *sender);
  // The "before" telemetry snapshot (tessera.v1's Telemetry service), taken when the measured
  // phase begins; a KServe server has none.
  std::optional<v1::TelemetrySnapshot> before;
  std::thread before_thread([&] {
    if (plan) return;
    std::this_thread::sleep_until(timeline.measure_start);
    before = get_telemetry(*telemetry, args.connection);
  });
  load.run();
  before_thread.join();
  const std::optional<v1::TelemetrySnapshot> after = plan ? std::nullopt : get_telemetry(*telemetry, args.connection);

  // The report, from a copy of what was recorded (late callbacks may still touch the state).
  const BenchRecord record = load.record();
  const std::vector<BenchWindow> windows = bench_windows(record.samples, args.window_s);
  const int exit_code = emit_report(args, bench_report(args, run, record, windows, before, after), windows);
  if (!record.drained || !record.finished) {
    std::cerr << "tessera bench: some requests were still unanswered at the end\n";
    // Calls in flight still point into the sender: leave it to the process exit.
    static_cast<void>(sender.release());
  }
  return exit_code;
}

}  // namespace tessera::client
