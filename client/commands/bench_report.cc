#include "client/commands/bench_report.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include "client/commands/common.h"

namespace tessera::client {
namespace {

using nlohmann::json;

json config_json(const BenchArgs& args, const BenchRunInfo& run) {
  const ProtocolOptions& p = args.protocol;
  json protocol = {{"name", p.protocol}};
  if (p.kserve()) {
    protocol["transport"] = p.transport;
    protocol["input_datatype"] = run.input_datatype;
    if (p.http()) {
      protocol["input_tensor_format"] = p.input_tensor_format;
      protocol["output_tensor_format"] = p.output_tensor_format;
    }
  }
  return {{"server", args.connection.server},
          {"protocol", std::move(protocol)},
          {"model", run.model},
          {"mode", args.mode},
          {"loop", run.shape.open_loop ? "open" : "closed"},
          {"concurrency", run.shape.slots},
          {"rate", args.rate},
          {"arrivals", args.arrivals},
          {"max_outstanding", args.max_outstanding},
          {"duration_s", run.shape.duration_s},
          {"requests", args.requests},
          {"warmup_s", args.warmup_s},
          {"tls", !args.connection.tls_ca.empty()},
          {"images", run.images},
          {"images_dir", run.images_dir}};
}

json requests_json(const BenchRecord& record, uint64_t ok) {
  const size_t answered = record.samples.size();
  return {{"sent", record.measured_sent},
          {"answered", answered},
          {"ok", ok},
          {"failed", answered - ok},
          {"dropped", record.dropped},
          {"not_sent", record.not_sent},
          {"unanswered", record.drained && record.finished ? 0 : record.measured_sent - answered}};
}

// Counts by gRPC code name into report["errors"], one message per code into
// report["error_examples"].
void add_errors(json& report, const BenchRecord& record) {
  json errors_json = json::object(), examples_json = json::object();
  for (const auto& [code, n] : record.errors) {
    errors_json[grpc_code_name(code)] = n;
    const auto example = record.error_examples.find(code);
    examples_json[grpc_code_name(code)] = example != record.error_examples.end() ? example->second : std::string();
  }
  report["errors"] = errors_json;
  report["error_examples"] = examples_json;
}

// report["power"] from the two snapshots, or null and report["power_na_reason"].
void add_power(json& report, const std::optional<v1::TelemetrySnapshot>& before,
               const std::optional<v1::TelemetrySnapshot>& after, uint64_t ok) {
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
}

// Each image's top-1 label (its first successful answer) and how many images were answered with
// more than one top-1 label in the run.
json top1_json(const BenchRunInfo& run, const BenchRecord& record) {
  std::map<size_t, std::string> first;
  std::set<size_t> differing;
  for (const BenchSample& s : record.samples) {
    if (s.code != grpc::StatusCode::OK) continue;
    const auto [it, inserted] = first.emplace(s.image, s.top1);
    if (!inserted && it->second != s.top1) differing.insert(s.image);
  }
  json by_image = json::object();
  for (const auto& [image, label] : first) {
    by_image[image < run.image_paths.size() ? run.image_paths[image] : std::to_string(image)] = label;
  }
  return {{"by_image", std::move(by_image)}, {"inconsistent_images", differing.size()}};
}

json windows_json(const std::vector<BenchWindow>& windows) {
  json rows = json::array();
  for (const BenchWindow& w : windows) {
    rows.push_back({{"end_s", w.end_s},
                    {"requests", w.requests},
                    {"rps", w.rps},
                    {"p50_ms", w.p50_ms},
                    {"p99_ms", w.p99_ms},
                    {"errors", w.errors}});
  }
  return rows;
}

// "tessera.v1" or "kserve grpc BYTES" / "kserve http FP32 binary/json".
std::string protocol_text(const json& p) {
  if (p["name"] != "kserve") return "tessera.v1";
  std::string out = "kserve " + p["transport"].get<std::string>() + " " + p["input_datatype"].get<std::string>();
  if (p.contains("input_tensor_format"))
    out += " " + p["input_tensor_format"].get<std::string>() + "/" + p["output_tensor_format"].get<std::string>();
  return out;
}

void print_stats_line(const char* name, const json& s, const char* unit) {
  std::printf("  %-10s mean %9.1f  p50 %9.1f  p99 %9.1f %s\n", name, s["mean"].get<double>(), s["p50"].get<double>(),
              s["p99"].get<double>(), unit);
}

void print_server_breakdown(const json& r) {
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
}

void print_power(const json& r) {
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

json bench_report(const BenchArgs& args, const BenchRunInfo& run, const BenchRecord& record,
                  const std::vector<BenchWindow>& windows, const std::optional<v1::TelemetrySnapshot>& before,
                  const std::optional<v1::TelemetrySnapshot>& after) {
  uint64_t ok = 0;
  double last_done = 0;
  std::vector<double> latencies_ms;
  for (const BenchSample& s : record.samples) {
    last_done = std::max(last_done, s.done_s);
    if (s.code == grpc::StatusCode::OK) {
      ++ok;
      latencies_ms.push_back(s.latency_us / 1000);
    }
  }
  json report;
  report["config"] = config_json(args, run);
  report["requests"] = requests_json(record, ok);
  report["interrupted"] = interrupted();
  report["elapsed_s"] = last_done;
  report["throughput_ips"] = last_done > 0 ? static_cast<double>(ok) / last_done : 0.0;
  report["latency_ms"] = summarize(latencies_ms);
  add_errors(report, record);
  if (args.protocol.kserve()) {
    report["server"] = nullptr;
    report["overhead_us"] = nullptr;
    report["server_na_reason"] = "KServe answers carry no timing breakdown";
  } else {
    report["server"] = server_breakdown(record.samples);
    report["overhead_us"] = server_overhead(record.samples);
  }
  add_power(report, before, after, ok);
  if (args.protocol.kserve() && !before && !after) report["power_na_reason"] = "not asked: --protocol kserve";
  report["top1"] = top1_json(run, record);
  report["windows"] = windows_json(windows);
  return report;
}

void print_bench_report(const json& r) {
  const json& c = r["config"];
  std::printf("tessera bench: %s, model %s, %s, %s, %s loop", c["server"].get<std::string>().c_str(),
              c["model"].get<std::string>().c_str(), protocol_text(c["protocol"]).c_str(),
              c["mode"].get<std::string>().c_str(), c["loop"].get<std::string>().c_str());
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
  if (r["server"].is_null()) {
    std::printf("server breakdown: n/a (%s)\n", r["server_na_reason"].get<std::string>().c_str());
  } else {
    print_server_breakdown(r);
  }
  print_power(r);
  const json& t = r["top1"];
  std::printf("answers:    %zu images answered, %zu with more than one top-1 label\n", t["by_image"].size(),
              t["inconsistent_images"].get<size_t>());
}

bool write_bench_csv(const std::string& path, const std::vector<BenchWindow>& windows) {
  std::ofstream csv(path);
  csv << "time_s,requests,rps,p50_ms,p99_ms,errors\n";
  for (const BenchWindow& w : windows) {
    char row[160];
    std::snprintf(row, sizeof row, "%.3f,%llu,%.2f,%.3f,%.3f,%llu\n", w.end_s,
                  static_cast<unsigned long long>(w.requests), w.rps, w.p50_ms, w.p99_ms,
                  static_cast<unsigned long long>(w.errors));
    csv << row;
  }
  if (!csv) {
    std::cerr << "tessera bench: cannot write " << path << "\n";
    return false;
  }
  return true;
}

}  // namespace tessera::client
