// tessera bench: load against tesserad from a folder of images, closed loop (N in flight) or
// open loop (a rate, Poisson or evenly spaced, with a bound on requests in flight), unary or
// streaming; a live progress line; a report of client latency, the server's breakdown, server
// overhead and power per image.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "client/commands/bench_senders.h"
#include "client/commands/bench_stats.h"
#include "client/commands/commands.h"
#include "client/commands/common.h"

namespace tessera::client {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

struct Image {
  std::string path;
  std::string bytes;
};

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// What the driver and the answer callbacks share.
struct BenchState {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<BenchSample> samples;  // measured answers
  std::map<grpc::StatusCode, uint64_t> errors;
  std::map<grpc::StatusCode, std::string> error_examples;
  std::vector<unsigned> free_slots;  // closed loop
  uint64_t outstanding = 0;
  uint64_t measured_sent = 0;
  uint64_t warmup_sent = 0;
  uint64_t warmup_done = 0;
  uint64_t dropped = 0;   // open loop arrivals over the in-flight bound
  uint64_t not_sent = 0;  // sends refused: the slot's stream had ended
  Clock::time_point measure_start;
};

// The images to send: --images, else <models-dir>/<model>/calibration.
bool load_images(const BenchArgs& args, const std::string& model, std::vector<Image>& images, std::string& dir) {
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
    images.push_back({path.string(), std::move(bytes)});
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

// The live line: cumulative requests and errors, rate and percentiles of the last second.
std::string progress_line(BenchState& state, Clock::time_point now) {
  std::vector<double> recent;
  uint64_t done = 0, errors = 0, recent_count = 0;
  bool warming;
  uint64_t warmup_done;
  {
    std::lock_guard lock(state.mu);
    warming = now < state.measure_start;
    warmup_done = state.warmup_done;
    const double t = seconds_between(state.measure_start, now);
    done = state.samples.size();
    for (auto it = state.samples.rbegin(); it != state.samples.rend() && it->done_s >= t - 1.0; ++it) {
      ++recent_count;
      if (it->code == grpc::StatusCode::OK) recent.push_back(it->latency_us);
    }
    for (const auto& [code, n] : state.errors) errors += n;
  }
  std::sort(recent.begin(), recent.end());
  char line[256];
  if (warming) {
    std::snprintf(line, sizeof line, "warmup: %llu requests", static_cast<unsigned long long>(warmup_done));
  } else {
    std::snprintf(line, sizeof line, "requests %llu  rps %.1f  p50 %.2f ms  p99 %.2f ms  errors %llu",
                  static_cast<unsigned long long>(done), static_cast<double>(recent_count),
                  percentile(recent, 50) / 1000, percentile(recent, 99) / 1000,
                  static_cast<unsigned long long>(errors));
  }
  return line;
}

void print_stats_line(const char* name, const json& s, const char* unit) {
  std::printf("  %-10s mean %9.1f  p50 %9.1f  p99 %9.1f %s\n", name, s["mean"].get<double>(), s["p50"].get<double>(),
              s["p99"].get<double>(), unit);
}

void print_text_report(const json& r) {
  const json& c = r["config"];
  std::printf("tessera bench: %s, model %s, %s, %s loop", c["server"].get<std::string>().c_str(),
              c["model"].get<std::string>().c_str(), c["mode"].get<std::string>().c_str(),
              c["loop"].get<std::string>().c_str());
  if (c["loop"] == "closed")
    std::printf(", concurrency %u", c["concurrency"].get<unsigned>());
  else
    std::printf(", %.1f req/s %s", c["rate"].get<double>(), c["arrivals"].get<std::string>().c_str());
  std::printf(", %zu images from %s\n", c["images"].get<size_t>(), c["images_dir"].get<std::string>().c_str());
  const json& q = r["requests"];
  std::printf("requests:   %llu sent, %llu ok, %llu failed", q["sent"].get<unsigned long long>(),
              q["ok"].get<unsigned long long>(), q["failed"].get<unsigned long long>());
  if (q["dropped"].get<uint64_t>())
    std::printf(", %llu dropped (in-flight bound)", q["dropped"].get<unsigned long long>());
  std::printf(" in %.2f s\n", r["elapsed_s"].get<double>());
  std::printf("throughput: %.1f images/s\n", r["throughput_ips"].get<double>());
  const json& l = r["latency_ms"];
  std::printf("latency:    p50 %.2f  p90 %.2f  p95 %.2f  p99 %.2f  max %.2f ms (client, successful requests)\n",
              l["p50"].get<double>(), l["p90"].get<double>(), l["p95"].get<double>(), l["p99"].get<double>(),
              l["max"].get<double>());
  if (r["errors"].empty()) {
    std::printf("errors:     none\n");
  } else {
    std::printf("errors:\n");
    for (const auto& [code, n] : r["errors"].items()) {
      std::printf("  %-20s %llu  (%s)\n", code.c_str(), n.get<unsigned long long>(),
                  r["error_examples"][code].get<std::string>().c_str());
    }
  }
  const json& s = r["server"];
  std::printf("server breakdown (from the responses' Timing, µs):\n");
  for (const char* stage : {"queue", "decode", "fabric", "host", "inference", "total"}) {
    print_stats_line(stage, s[std::string(stage) + "_us"], "µs");
  }
  std::printf("  batch size mean %.2f; modeled fabric energy %.1f µJ/image\n", s["batch_size_mean"].get<double>(),
              s["modeled_energy_uj_mean"].get<double>());
  const json& o = r["overhead_us"];
  std::printf("server overhead (client latency - inference_us): p50 %.1f µs  p99 %.1f µs  mean %.1f µs\n",
              o["p50"].get<double>(), o["p99"].get<double>(), o["mean"].get<double>());
  if (r["power"].is_null()) {
    std::printf("power:      n/a (%s)\n", r["power_na_reason"].get<std::string>().c_str());
  } else {
    const json& p = r["power"];
    std::printf("power:      mean %.3f W (%s), %.4f J over the run, %.3f mJ/image\n            (%s)\n",
                p["mean_power_w"].get<double>(), p["source"].get<std::string>().c_str(), p["energy_j"].get<double>(),
                p["energy_per_image_j"].get<double>() * 1000, p["method"].get<std::string>().c_str());
  }
}

}  // namespace

CLI::App* add_bench_command(CLI::App& app, BenchArgs& args) {
  CLI::App* cmd = app.add_subcommand("bench", "Load-test tesserad with a folder of images");
  add_connection_options(cmd, args.connection);
  cmd->add_option("--model", args.model, "Model name (default: the daemon's default model)");
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
  cmd->add_option("--mode", args.mode, "unary: Classify calls; stream: ClassifyStream")
      ->check(CLI::IsMember({"unary", "stream"}))
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
  install_interrupt_handler();
  std::shared_ptr<grpc::Channel> channel = make_channel(args.connection);
  auto classifier = v1::Classifier::NewStub(channel);
  auto telemetry = v1::Telemetry::NewStub(channel);

  // Preflight: the daemon answers, and which model is the default.
  std::string model = args.model;
  {
    grpc::ClientContext context;
    prepare_context(context, args.connection, std::chrono::seconds(5));
    v1::ListModelsResponse models;
    const grpc::Status status = classifier->ListModels(&context, v1::ListModelsRequest(), &models);
    if (!status.ok()) {
      std::cerr << "tessera bench: " << args.connection.server << ": " << grpc_code_name(status.error_code()) << ": "
                << status.error_message() << "\n";
      return 1;
    }
    if (model.empty() && models.models_size() > 0) model = models.models(0).name();
  }
  std::vector<Image> images;
  std::string images_dir;
  if (!load_images(args, model, images, images_dir)) return 1;

  const bool open_loop = args.rate > 0;
  const bool stream = args.mode == "stream";
  const unsigned slots = std::max(1u, args.concurrency);
  const double duration_s = args.duration_s > 0 ? args.duration_s : (args.requests > 0 ? 0.0 : 10.0);
  const double cap_s = duration_s > 0 ? std::min(duration_s, args.max_seconds) : args.max_seconds;

  BenchCallOptions call_options;
  call_options.model = args.model;
  call_options.top_k = args.top_k;
  call_options.timeout = seconds_to_us(args.timeout_s);
  std::unique_ptr<BenchSender> sender = stream ? make_stream_sender(args.connection, channel, call_options, slots)
                                               : make_unary_sender(args.connection, channel, call_options);

  auto state = std::make_shared<BenchState>();
  const Clock::time_point start = Clock::now();
  state->measure_start =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(args.warmup_s));
  const Clock::time_point measure_end =
      state->measure_start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(cap_s));
  for (unsigned i = 0; i < slots; ++i) state->free_slots.push_back(i);

  // The "before" telemetry snapshot, taken when the measured phase begins.
  std::optional<v1::TelemetrySnapshot> before;
  std::thread before_thread([&] {
    std::this_thread::sleep_until(state->measure_start);
    before = get_telemetry(*telemetry, args.connection);
  });

  // Progress on stderr: in place on a terminal, a line a second otherwise.
  std::atomic<bool> running{true};
  const bool tty = is_tty(STDERR_FILENO);
  std::thread progress_thread([&] {
    auto next = Clock::now();
    while (running.load()) {
      next += tty ? std::chrono::milliseconds(250) : std::chrono::milliseconds(1000);
      {
        std::unique_lock lock(state->mu);
        state->cv.wait_until(lock, next, [&] { return !running.load(); });
      }
      if (!running.load()) break;
      const std::string line = progress_line(*state, Clock::now());
      if (tty)
        std::fprintf(stderr, "\r%s\033[K", line.c_str());
      else
        std::fprintf(stderr, "%s\n", line.c_str());
      std::fflush(stderr);
    }
  });

  // Sends request `seq` on `slot`; the answer is recorded (when measured) and frees the slot.
  uint64_t seq = 0;
  auto issue = [&](unsigned slot, Clock::time_point now) {
    const bool measured = now >= state->measure_start;
    const Image& image = images[seq % images.size()];
    const std::string id = "bench-" + std::to_string(seq++);
    {
      std::lock_guard lock(state->mu);
      ++state->outstanding;
      ++(measured ? state->measured_sent : state->warmup_sent);
    }
    const bool sent = sender->send(
        slot, id, image.bytes, [state, slot, now, measured](const grpc::Status& status, const v1::ClassifyResponse* r) {
          const Clock::time_point done = Clock::now();
          std::lock_guard lock(state->mu);
          --state->outstanding;
          state->free_slots.push_back(slot);
          if (measured) {
            BenchSample sample;
            sample.sent_s = seconds_between(state->measure_start, now);
            sample.done_s = seconds_between(state->measure_start, done);
            sample.latency_us = std::chrono::duration<double, std::micro>(done - now).count();
            sample.code = status.error_code();
            if (r) sample.timing = r->timing();
            if (!status.ok()) {
              ++state->errors[status.error_code()];
              state->error_examples.emplace(status.error_code(), status.error_message());
            }
            state->samples.push_back(std::move(sample));
          } else {
            ++state->warmup_done;
          }
          state->cv.notify_all();
        });
    if (!sent) {
      std::lock_guard lock(state->mu);
      --state->outstanding;
      --(measured ? state->measured_sent : state->warmup_sent);
      ++state->not_sent;
    }
    return sent;
  };
  auto should_stop = [&](Clock::time_point now) {
    if (interrupted()) return true;
    if (now >= measure_end) return true;
    std::lock_guard lock(state->mu);
    return args.requests > 0 && state->measured_sent >= args.requests;
  };

  if (!open_loop) {
    // Closed loop: a request leaves as soon as a slot is free.
    unsigned live_slots = slots;
    while (live_slots > 0) {
      unsigned slot;
      {
        std::unique_lock lock(state->mu);
        state->cv.wait_until(lock, Clock::now() + std::chrono::milliseconds(50),
                             [&] { return !state->free_slots.empty(); });
        if (state->free_slots.empty()) {
          lock.unlock();
          if (should_stop(Clock::now())) break;
          continue;
        }
        slot = state->free_slots.back();
        state->free_slots.pop_back();
      }
      const Clock::time_point now = Clock::now();
      if (should_stop(now)) break;
      if (!issue(slot, now)) --live_slots;  // its stream ended: the slot is gone
    }
  } else {
    // Open loop: arrivals on a schedule, whatever the answers do.
    std::mt19937_64 rng(12345);
    std::exponential_distribution<double> exponential(args.rate);
    Clock::time_point next = start;
    unsigned arrival = 0;
    while (true) {
      {
        std::unique_lock lock(state->mu);
        // Wakes at least every 100 ms to notice Ctrl-C and the end of the run.
        state->cv.wait_until(lock, std::min(next, Clock::now() + std::chrono::milliseconds(100)),
                             [&] { return interrupted(); });
      }
      const Clock::time_point now = Clock::now();
      if (should_stop(now)) break;
      if (now >= next) {
        bool full;
        {
          std::lock_guard lock(state->mu);
          full = state->outstanding >= args.max_outstanding;
          if (full && now >= state->measure_start) ++state->dropped;
        }
        if (!full) issue(arrival++ % slots, now);
        const double gap = args.arrivals == "fixed" ? 1.0 / args.rate : exponential(rng);
        next += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(gap));
      }
    }
  }

  // Drain: every unary call has a deadline; streams are closed, then cancelled if stuck.
  const Clock::time_point drain_deadline = Clock::now() + seconds_to_us(args.timeout_s) + std::chrono::seconds(2);
  const bool finished = sender->finish(drain_deadline);
  bool drained;
  {
    std::unique_lock lock(state->mu);
    drained = state->cv.wait_until(lock, drain_deadline, [&] { return state->outstanding == 0; });
  }
  running = false;
  state->cv.notify_all();
  progress_thread.join();
  if (tty) std::fprintf(stderr, "\r\033[K");
  before_thread.join();
  const std::optional<v1::TelemetrySnapshot> after = get_telemetry(*telemetry, args.connection);

  // The report, from a copy of what was recorded (late callbacks may still touch the state).
  std::vector<BenchSample> samples;
  std::map<grpc::StatusCode, uint64_t> errors;
  std::map<grpc::StatusCode, std::string> error_examples;
  uint64_t measured_sent, dropped, not_sent;
  {
    std::lock_guard lock(state->mu);
    samples = state->samples;
    errors = state->errors;
    error_examples = state->error_examples;
    measured_sent = state->measured_sent;
    dropped = state->dropped;
    not_sent = state->not_sent;
  }
  uint64_t ok = 0;
  double last_done = 0;
  std::vector<double> latencies_ms;
  for (const BenchSample& s : samples) {
    last_done = std::max(last_done, s.done_s);
    if (s.code == grpc::StatusCode::OK) {
      ++ok;
      latencies_ms.push_back(s.latency_us / 1000);
    }
  }
  json report;
  report["config"] = {{"server", args.connection.server},
                      {"model", model},
                      {"mode", args.mode},
                      {"loop", open_loop ? "open" : "closed"},
                      {"concurrency", slots},
                      {"rate", args.rate},
                      {"arrivals", args.arrivals},
                      {"max_outstanding", args.max_outstanding},
                      {"duration_s", duration_s},
                      {"requests", args.requests},
                      {"warmup_s", args.warmup_s},
                      {"tls", !args.connection.tls_ca.empty()},
                      {"images", images.size()},
                      {"images_dir", images_dir}};
  report["requests"] = {{"sent", measured_sent},
                        {"answered", samples.size()},
                        {"ok", ok},
                        {"failed", samples.size() - ok},
                        {"dropped", dropped},
                        {"not_sent", not_sent},
                        {"unanswered", drained && finished ? 0 : measured_sent - samples.size()}};
  report["interrupted"] = interrupted();
  report["elapsed_s"] = last_done;
  report["throughput_ips"] = last_done > 0 ? static_cast<double>(ok) / last_done : 0.0;
  report["latency_ms"] = summarize(latencies_ms);
  json errors_json = json::object(), examples_json = json::object();
  for (const auto& [code, n] : errors) {
    errors_json[grpc_code_name(code)] = n;
    examples_json[grpc_code_name(code)] = error_examples[code];
  }
  report["errors"] = errors_json;
  report["error_examples"] = examples_json;
  report["server"] = server_breakdown(samples);
  report["overhead_us"] = server_overhead(samples);
  std::string power_reason = "GetTelemetry failed";
  std::optional<BenchPower> power;
  if (before && after) power = bench_power(*before, *after, ok, power_reason);
  if (power) {
    report["power"] = {{"source", power->source},
                       {"mean_power_w", power->mean_power_w},
                       {"energy_j", power->energy_j},
                       {"energy_per_image_j", power->energy_per_image_j},
                       {"method", power->method}};
  } else {
    report["power"] = nullptr;
    report["power_na_reason"] = power_reason;
  }
  const std::vector<BenchWindow> windows = bench_windows(samples, args.window_s);
  json windows_json = json::array();
  for (const BenchWindow& w : windows) {
    windows_json.push_back({{"end_s", w.end_s},
                            {"requests", w.requests},
                            {"rps", w.rps},
                            {"p50_ms", w.p50_ms},
                            {"p99_ms", w.p99_ms},
                            {"errors", w.errors}});
  }
  report["windows"] = windows_json;

  int exit_code = ok > 0 ? 0 : 1;
  if (!args.csv.empty()) {
    std::ofstream csv(args.csv);
    csv << "time_s,requests,rps,p50_ms,p99_ms,errors\n";
    for (const BenchWindow& w : windows) {
      char row[160];
      std::snprintf(row, sizeof row, "%.3f,%llu,%.2f,%.3f,%.3f,%llu\n", w.end_s,
                    static_cast<unsigned long long>(w.requests), w.rps, w.p50_ms, w.p99_ms,
                    static_cast<unsigned long long>(w.errors));
      csv << row;
    }
    if (!csv) {
      std::cerr << "tessera bench: cannot write " << args.csv << "\n";
      exit_code = 1;
    }
  }
  if (args.json) {
    std::cout << report.dump(2) << "\n";
  } else {
    print_text_report(report);
  }
  std::cout.flush();
  if (ok == 0) std::cerr << "tessera bench: no request succeeded\n";
  if (!drained || !finished) {
    std::cerr << "tessera bench: some requests were still unanswered at the end\n";
    // Calls in flight still point into the sender: leave it to the process exit.
    static_cast<void>(sender.release());
  }
  return exit_code;
}

}  // namespace tessera::client
