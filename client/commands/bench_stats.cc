#include "client/commands/bench_stats.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

namespace tessera::client {

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double rank = std::ceil(p / 100.0 * static_cast<double>(sorted.size()));
  const size_t index = rank < 1 ? 0 : std::min(sorted.size() - 1, static_cast<size_t>(rank) - 1);
  return sorted[index];
}

nlohmann::json summarize(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const double sum = std::accumulate(values.begin(), values.end(), 0.0);
  return {{"count", values.size()},
          {"mean", values.empty() ? 0.0 : sum / static_cast<double>(values.size())},
          {"p50", percentile(values, 50)},
          {"p90", percentile(values, 90)},
          {"p95", percentile(values, 95)},
          {"p99", percentile(values, 99)},
          {"max", values.empty() ? 0.0 : values.back()}};
}

std::vector<BenchWindow> bench_windows(const std::vector<BenchSample>& samples, double window_s) {
  std::vector<BenchWindow> windows;
  if (samples.empty() || window_s <= 0) return windows;
  double last = 0;
  for (const BenchSample& s : samples) last = std::max(last, s.done_s);
  const size_t count = static_cast<size_t>(std::floor(last / window_s)) + 1;
  std::vector<std::vector<double>> latencies(count);
  windows.resize(count);
  for (size_t i = 0; i < count; ++i) windows[i].end_s = static_cast<double>(i + 1) * window_s;
  for (const BenchSample& s : samples) {
    const size_t i = std::min(count - 1, static_cast<size_t>(std::max(0.0, s.done_s) / window_s));
    ++windows[i].requests;
    if (s.code == grpc::StatusCode::OK)
      latencies[i].push_back(s.latency_us);
    else
      ++windows[i].errors;
  }
  for (size_t i = 0; i < count; ++i) {
    // The last window ends at the last answer, not at its nominal end.
    const double length = i + 1 == count ? std::max(1e-6, last - static_cast<double>(i) * window_s) : window_s;
    windows[i].rps = static_cast<double>(windows[i].requests) / length;
    if (i + 1 == count) windows[i].end_s = last;
    std::sort(latencies[i].begin(), latencies[i].end());
    windows[i].p50_ms = percentile(latencies[i], 50) / 1000;
    windows[i].p99_ms = percentile(latencies[i], 99) / 1000;
  }
  return windows;
}

std::optional<BenchPower> bench_power(const v1::TelemetrySnapshot& before, const v1::TelemetrySnapshot& after,
                                      uint64_t ok_images, std::string& reason) {
  if (!before.has_power_watts() || !after.has_power_watts()) {
    reason = "the daemon reports no power (power_source '" + after.power_source() + "')";
    return std::nullopt;
  }
  if (ok_images == 0) {
    reason = "no image was classified";
    return std::nullopt;
  }
  BenchPower p;
  p.source = after.power_source();
  p.energy_j = after.energy_joules() - before.energy_joules();
  const double seconds = static_cast<double>(after.time_unix_ms() - before.time_unix_ms()) / 1000.0;
  if (p.energy_j > 0 && seconds > 0) {
    p.mean_power_w = p.energy_j / seconds;
    p.energy_per_image_j = p.energy_j / static_cast<double>(ok_images);
    p.method = "energy_joules delta between GetTelemetry before and after / images";
  } else {
    // The run was shorter than the daemon's sampling interval: no sample landed in between, so
    // the two instantaneous readings stand for the run.
    p.mean_power_w = 0.5 * (before.power_watts() + after.power_watts());
    p.energy_per_image_j = p.mean_power_w * std::max(seconds, 0.0) / static_cast<double>(ok_images);
    p.method = "mean of the two power readings x snapshot interval / images (no energy sample in the run)";
  }
  return p;
}

namespace {

nlohmann::json stage_stats(const std::vector<BenchSample>& samples, const std::function<double(const v1::Timing&)>& f) {
  std::vector<double> values;
  for (const BenchSample& s : samples) {
    if (s.code == grpc::StatusCode::OK) values.push_back(f(s.timing));
  }
  const nlohmann::json all = summarize(std::move(values));
  return {{"mean", all["mean"]}, {"p50", all["p50"]}, {"p99", all["p99"]}};
}

}  // namespace

nlohmann::json server_breakdown(const std::vector<BenchSample>& samples) {
  using T = v1::Timing;
  nlohmann::json out;
  out["queue_us"] = stage_stats(samples, [](const T& t) { return static_cast<double>(t.queue_us()); });
  out["decode_us"] = stage_stats(samples, [](const T& t) { return static_cast<double>(t.decode_us()); });
  out["fabric_us"] = stage_stats(samples, [](const T& t) { return static_cast<double>(t.fabric_us()); });
  out["host_us"] = stage_stats(samples, [](const T& t) { return static_cast<double>(t.host_us()); });
  out["inference_us"] = stage_stats(samples, [](const T& t) { return static_cast<double>(t.inference_us()); });
  out["total_us"] = stage_stats(samples, [](const T& t) { return static_cast<double>(t.total_us()); });
  out["batch_size_mean"] = stage_stats(samples, [](const T& t) { return static_cast<double>(t.batch_size()); })["mean"];
  out["modeled_energy_uj_mean"] = stage_stats(samples, [](const T& t) { return t.modeled_energy_uj(); })["mean"];
  return out;
}

nlohmann::json server_overhead(const std::vector<BenchSample>& samples) {
  std::vector<double> values;
  for (const BenchSample& s : samples) {
    if (s.code == grpc::StatusCode::OK) values.push_back(s.latency_us - static_cast<double>(s.timing.inference_us()));
  }
  const nlohmann::json all = summarize(std::move(values));
  return {{"mean", all["mean"]}, {"p50", all["p50"]}, {"p99", all["p99"]}};
}

}  // namespace tessera::client
