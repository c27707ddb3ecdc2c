// tessera fleet: one row per board (reachable, ready, device, models, images/s, power,
// temperature, p99), every target queried concurrently with a short deadline; refreshed in
// place, or once. An unreachable board is a "down" row with the reason, never fatal.
//
// Exit status: 0 when at least one target answered in the last refresh, 1 when none did, 2 on
// bad arguments (no targets, unreadable --targets file).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <future>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>

#include "client/commands/commands.h"
#include "client/commands/common.h"
#include "client/plan/text_table.h"

namespace tessera::client {
namespace {

struct BoardRow {
  std::string target;
  bool up = false;
  std::string reason;  // why it is down
  bool ready = false;
  std::string device;
  std::vector<std::string> models;
  double images_per_second = 0;
  std::optional<double> power_w;
  std::optional<double> temperature_c;
  std::optional<double> p99_us;  // the "total" stage's p99, worst over models
};

struct Target {
  std::string address;
  std::unique_ptr<v1::Telemetry::Stub> telemetry;
  std::unique_ptr<v1::Classifier::Stub> classifier;
};

BoardRow query(Target& target, const Connection& connection, std::chrono::milliseconds timeout) {
  BoardRow row;
  row.target = target.address;
  // Both calls at once, each with the same short deadline.
  grpc::ClientContext telemetry_context, models_context;
  prepare_context(telemetry_context, connection, timeout);
  prepare_context(models_context, connection, timeout);
  const v1::GetTelemetryRequest telemetry_request;
  const v1::ListModelsRequest models_request;
  v1::TelemetrySnapshot snapshot;
  v1::ListModelsResponse models;
  std::promise<grpc::Status> telemetry_done, models_done;
  target.telemetry->async()->GetTelemetry(&telemetry_context, &telemetry_request, &snapshot,
                                          [&](grpc::Status s) { telemetry_done.set_value(std::move(s)); });
  target.classifier->async()->ListModels(&models_context, &models_request, &models,
                                         [&](grpc::Status s) { models_done.set_value(std::move(s)); });
  const grpc::Status telemetry_status = telemetry_done.get_future().get();
  const grpc::Status models_status = models_done.get_future().get();
  if (!telemetry_status.ok() && !models_status.ok()) {
    row.reason = std::string(grpc_code_name(telemetry_status.error_code())) + ": " + telemetry_status.error_message();
    return row;
  }
  row.up = true;
  if (models_status.ok()) {
    for (const v1::ModelInfo& m : models.models()) row.models.push_back(m.name());
  } else {
    row.reason = std::string("ListModels ") + grpc_code_name(models_status.error_code());
  }
  if (!telemetry_status.ok()) {
    row.reason = std::string("GetTelemetry ") + grpc_code_name(telemetry_status.error_code());
    return row;
  }
  row.ready = snapshot.ready();
  row.device = snapshot.device_kind();
  if (!snapshot.board().empty()) row.device += " (" + snapshot.board() + ")";
  row.images_per_second = snapshot.images_per_second();
  if (snapshot.has_power_watts()) row.power_w = snapshot.power_watts();
  if (snapshot.has_temperature_c()) row.temperature_c = snapshot.temperature_c();
  for (const v1::ModelTelemetry& m : snapshot.models()) {
    for (const v1::StageLatency& l : m.latency()) {
      if (l.stage() == "total" && l.count() > 0) row.p99_us = std::max(row.p99_us.value_or(0.0), l.p99_us());
    }
  }
  return row;
}

nlohmann::json row_json(const BoardRow& r) {
  using nlohmann::json;
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  return {{"target", r.target},
          {"up", r.up},
          {"reason", r.reason},
          {"ready", r.ready},
          {"device", r.device},
          {"models", r.models},
          {"images_per_second", r.images_per_second},
          {"power_watts", opt(r.power_w)},
          {"temperature_c", opt(r.temperature_c)},
          {"p99_total_us", opt(r.p99_us)}};
}

std::string or_na(const std::optional<double>& v, const char* fmt) {
  if (!v) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, fmt, *v);
  return buf;
}

std::string render(const std::vector<BoardRow>& rows) {
  using A = TextTable::Align;
  TextTable table({{"target", A::kLeft},
                   {"state", A::kLeft},
                   {"ready", A::kLeft},
                   {"device", A::kLeft},
                   {"models", A::kLeft},
                   {"images/s", A::kRight},
                   {"power", A::kRight},
                   {"temp", A::kRight},
                   {"p99", A::kRight},
                   {"note", A::kLeft}});
  for (const BoardRow& r : rows) {
    std::string models;
    for (const std::string& m : r.models) models += (models.empty() ? "" : ",") + m;
    if (!r.up) {
      table.add_row({r.target, "down", "-", "-", "-", "-", "-", "-", "-", r.reason});
      continue;
    }
    table.add_row({r.target, "up", r.ready ? "yes" : "no", r.device.empty() ? "?" : r.device, models,
                   or_na(r.images_per_second, "%.1f"), or_na(r.power_w, "%.2f W"), or_na(r.temperature_c, "%.1f C"),
                   r.p99_us ? or_na(*r.p99_us / 1000, "%.2f ms") : "n/a", r.reason});
  }
  std::ostringstream out;
  table.print(out);
  return out.str();
}

// Targets from the arguments and the --targets file (one per line, '#' comments, blanks ignored).
bool read_targets(const FleetArgs& args, std::vector<std::string>& out) {
  out = args.targets;
  if (!args.targets_file.empty()) {
    std::ifstream in(args.targets_file);
    if (!in) {
      std::cerr << "tessera fleet: cannot read " << args.targets_file << "\n";
      return false;
    }
    std::string line;
    while (std::getline(in, line)) {
      if (const size_t hash = line.find('#'); hash != std::string::npos) line.erase(hash);
      const size_t b = line.find_first_not_of(" \t\r");
      if (b == std::string::npos) continue;
      const size_t e = line.find_last_not_of(" \t\r");
      out.push_back(line.substr(b, e - b + 1));
    }
  }
  if (out.empty()) {
    std::cerr << "tessera fleet: no targets (HOST:PORT arguments or --targets FILE)\n";
    return false;
  }
  return true;
}

}  // namespace

CLI::App* add_fleet_command(CLI::App& app, FleetArgs& args) {
  CLI::App* cmd = app.add_subcommand("fleet", "One status row per tesserad board, queried concurrently");
  cmd->add_option("targets", args.targets, "Boards, HOST:PORT");
  cmd->add_option("--targets", args.targets_file, "File of HOST:PORT lines ('#' comments)");
  cmd->add_option("--tls-ca", args.connection.tls_ca, "Use TLS, trusting this PEM root CA file")
      ->check(CLI::ExistingFile);
  cmd->add_option("--token", args.connection.token, "Bearer token sent to every board")->envname("TESSERA_TOKEN");
  cmd->add_option("--timeout-ms", args.timeout_ms, "Deadline of each board's answer")
      ->check(CLI::Range(1u, 600000u))
      ->capture_default_str();
  cmd->add_option("--interval", args.interval_s, "Seconds between refreshes")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_flag("--once", args.once, "Print one table and exit");
  cmd->add_flag("--json", args.json, "JSON: one object per refresh per line");
  return cmd;
}

int run_fleet(const FleetArgs& args) {
  std::vector<std::string> addresses;
  if (!read_targets(args, addresses)) return 2;
  install_interrupt_handler();
  std::vector<Target> targets;
  for (const std::string& address : addresses) {
    Target t;
    t.address = address;
    std::shared_ptr<grpc::Channel> channel = make_channel(args.connection, address);
    t.telemetry = v1::Telemetry::NewStub(channel);
    t.classifier = v1::Classifier::NewStub(channel);
    targets.push_back(std::move(t));
  }
  const bool tty = !args.json && is_tty(STDOUT_FILENO);
  int exit_code = 1;
  while (true) {
    const auto started = std::chrono::steady_clock::now();
    std::vector<std::future<BoardRow>> answers;
    answers.reserve(targets.size());
    for (Target& t : targets) {
      answers.push_back(std::async(std::launch::async, [&t, &args] {
        return query(t, args.connection, std::chrono::milliseconds(args.timeout_ms));
      }));
    }
    std::vector<BoardRow> rows;
    rows.reserve(answers.size());
    for (auto& a : answers) rows.push_back(a.get());
    const size_t up =
        static_cast<size_t>(std::count_if(rows.begin(), rows.end(), [](const BoardRow& r) { return r.up; }));
    exit_code = up > 0 ? 0 : 1;
    if (args.json) {
      nlohmann::json boards = nlohmann::json::array();
      for (const BoardRow& r : rows) boards.push_back(row_json(r));
      std::cout << nlohmann::json{{"up", up}, {"down", rows.size() - up}, {"boards", std::move(boards)}}.dump(
                       -1, ' ', false, nlohmann::json::error_handler_t::replace)
                << std::endl;
    } else {
      if (tty && !args.once) std::cout << "\033[H\033[2J";
      std::cout << render(rows) << up << " of " << rows.size() << " boards up\n" << std::flush;
    }
    if (args.once) break;
    const auto next = started + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                    std::chrono::duration<double>(args.interval_s));
    while (!interrupted() && std::chrono::steady_clock::now() < next) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (interrupted()) break;
    if (!tty && !args.json) std::cout << "\n";
  }
  return exit_code;
}

}  // namespace tessera::client
