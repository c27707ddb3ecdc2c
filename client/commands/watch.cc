// tessera watch: the daemon's WatchTelemetry stream drawn in place in the terminal (ANSI clear +
// home), or one JSON object per snapshot per line; --count N stops after N, Ctrl-C ends it.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <sstream>
#include <thread>

#include "client/commands/commands.h"
#include "client/commands/common.h"

namespace tessera::client {
namespace {

std::string format(const char* fmt, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, value);
  return buf;
}

// "2024-05-01 12:00:00" local time of a snapshot.
std::string local_time(int64_t unix_ms) {
  const std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%F %T", &tm);
  return buf;
}

// One row per device instance: its state, power, energy, temperature, utilisation and throughput.
void render_devices(const v1::TelemetrySnapshot& s, std::ostringstream& out) {
  if (s.devices_size() == 0) return;
  char line[160];
  std::snprintf(line, sizeof line, "%-6s %-15s %10s %10s %8s %6s %11s %9s %6s\n", "device", "state", "power", "energy",
                "temp", "busy", "images/s", "images", "errors");
  out << line;
  for (const v1::DeviceTelemetry& d : s.devices()) {
    const std::string power = d.has_power_watts() ? format("%.3f W", d.power_watts()) : "n/a";
    const std::string temperature = d.has_temperature_c() ? format("%.1f °C", d.temperature_c()) : "n/a";
    std::snprintf(line, sizeof line, "%-6u %-15s %10s %8.2f J %8s %5.0f%% %11.1f %9llu %6llu\n", d.index(),
                  d.state().c_str(), power.c_str(), d.energy_joules(), temperature.c_str(),
                  d.fabric_utilization() * 100, d.images_per_second(), static_cast<unsigned long long>(d.images()),
                  static_cast<unsigned long long>(d.errors()));
    out << line;
  }
}

// One frame of text for a snapshot.
std::string render(const v1::TelemetrySnapshot& s, const std::string& server, unsigned index) {
  std::ostringstream out;
  out << "tesserad " << server << "  " << local_time(s.time_unix_ms()) << "  snapshot " << index
      << (s.ready() ? "  ready" : "  NOT READY (draining)") << "\n";
  out << "device       " << s.device_kind() << "  " << s.device_name();
  if (!s.board().empty()) out << "  board " << s.board();
  out << "\n";
  out << "power        "
      << (s.has_power_watts() ? format("%.3f W", s.power_watts()) + " (" + s.power_source() + ")" : "n/a")
      << "   energy " << format("%.2f J", s.energy_joules()) << "   temperature "
      << (s.has_temperature_c() ? format("%.1f °C", s.temperature_c()) + " (" + s.temperature_source() + ")" : "n/a")
      << "\n";
  for (const auto& [rail, watts] : s.rails_watts()) out << "  rail " << rail << format("  %.3f W", watts) << "\n";
  out << "throughput   " << format("%.1f images/s", s.images_per_second()) << "   queue " << s.queue_depth()
      << "   fabric busy " << format("%.0f%%", s.fabric_utilization() * 100) << "   modeled fabric energy "
      << format("%.3f J", s.modeled_energy_joules()) << "\n";
  render_devices(s, out);
  for (const v1::ModelTelemetry& m : s.models()) {
    out << "\nmodel " << m.name() << ": " << format("%.1f images/s", m.images_per_second()) << ", queue "
        << m.queue_depth() << ", " << m.requests_ok() << " ok, " << m.requests_failed() << " failed\n";
    uint64_t most = 0;
    for (const v1::BatchSizeCount& b : m.batch_sizes()) most = std::max(most, b.batches());
    if (most > 0) {
      out << "  batch sizes (batches since start)\n";
      constexpr int kBar = 30;
      for (const v1::BatchSizeCount& b : m.batch_sizes()) {
        const int filled = static_cast<int>((b.batches() * kBar + most - 1) / most);
        char size[16];
        std::snprintf(size, sizeof size, "  %4u ", b.size());
        out << size << "|" << std::string(static_cast<size_t>(filled), '#')
            << std::string(static_cast<size_t>(kBar - filled), ' ') << "| " << b.batches() << "\n";
      }
    }
    if (m.latency_size() > 0) {
      char line[128];
      std::snprintf(line, sizeof line, "  %-8s %11s %11s %11s %8s\n", "stage", "p50 µs", "p99 µs", "max µs", "count");
      out << line;
      for (const v1::StageLatency& l : m.latency()) {
        std::snprintf(line, sizeof line, "  %-8s %10.1f %10.1f %10.1f %8llu\n", l.stage().c_str(), l.p50_us(),
                      l.p99_us(), l.max_us(), static_cast<unsigned long long>(l.count()));
        out << line;
      }
    }
  }
  return out.str();
}

}  // namespace

CLI::App* add_watch_command(CLI::App& app, WatchArgs& args) {
  CLI::App* cmd = app.add_subcommand("watch", "Watch the daemon's telemetry live (power, throughput, latency)");
  add_connection_options(cmd, args.connection);
  cmd->add_option("--interval", args.interval_ms, "Milliseconds between snapshots (the daemon clamps to 50..60000)")
      ->check(CLI::Range(1u, 3600000u))
      ->capture_default_str();
  cmd->add_option("--count", args.count, "Stop after this many snapshots (0: until Ctrl-C)")->capture_default_str();
  cmd->add_flag("--json", args.json, "Print one JSON object per snapshot per line");
  return cmd;
}

int run_watch(const WatchArgs& args) {
  install_interrupt_handler();
  auto stub = v1::Telemetry::NewStub(make_channel(args.connection));
  grpc::ClientContext context;
  prepare_context(context, args.connection, std::chrono::microseconds(0));
  v1::WatchTelemetryRequest request;
  request.set_interval_ms(args.interval_ms);
  request.set_max_snapshots(args.count);
  std::unique_ptr<grpc::ClientReader<v1::TelemetrySnapshot>> reader = stub->WatchTelemetry(&context, request);

  // Ctrl-C cancels the call; the read loop then ends.
  std::atomic<bool> done{false};
  std::thread canceller([&] {
    while (!done.load()) {
      if (interrupted()) {
        context.TryCancel();
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });

  const bool tty = !args.json && is_tty(STDOUT_FILENO);
  unsigned received = 0;
  v1::TelemetrySnapshot snapshot;
  while (reader->Read(&snapshot)) {
    ++received;
    if (args.json) {
      std::cout << to_json(snapshot).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
    } else {
      if (tty)
        std::cout << "\033[H\033[2J";
      else if (received > 1)
        std::cout << "\n";
      std::cout << render(snapshot, args.connection.server, received) << std::flush;
    }
    if (args.count > 0 && received >= args.count) {
      context.TryCancel();
      break;
    }
  }
  const grpc::Status status = reader->Finish();
  done = true;
  canceller.join();
  const bool stopped_by_us = interrupted() || (args.count > 0 && received >= args.count);
  if (!status.ok() && !stopped_by_us) {
    std::cerr << "tessera watch: " << args.connection.server << ": " << grpc_code_name(status.error_code()) << ": "
              << status.error_message() << "\n";
    return 1;
  }
  if (args.count > 0 && received < args.count && !interrupted()) {
    std::cerr << "tessera watch: the daemon ended the stream after " << received << " snapshots\n";
    return 1;
  }
  return 0;
}

}  // namespace tessera::client
