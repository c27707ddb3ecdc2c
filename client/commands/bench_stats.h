// The numbers of `tessera bench`: what each answered request recorded and the report built from
// all of them (percentiles, per-window rows, the server's timing breakdown, power).
#pragma once

#include <grpcpp/grpcpp.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tessera/v1/classifier.pb.h"
#include "tessera/v1/telemetry.pb.h"

namespace tessera::client {

// One measured request.
struct BenchSample {
  double sent_s = 0;  // since the measured phase began
  double done_s = 0;
  double latency_us = 0;  // client side: send to answer
  grpc::StatusCode code = grpc::StatusCode::OK;
  v1::Timing timing;  // the server's breakdown; set when code is OK (tessera.v1 only)
  size_t image = 0;   // index of the image sent
  std::string top1;   // the answer's first class label; set when code is OK
};

// Nearest-rank percentile (p in [0, 100]) of `sorted` values; 0 when empty.
double percentile(const std::vector<double>& sorted, double p);

// count, mean, p50/p90/p95/p99/max of `values` (sorted in place).
nlohmann::json summarize(std::vector<double> values);

// One row of the per-window CSV.
struct BenchWindow {
  double end_s = 0;
  uint64_t requests = 0;  // answered in the window, failures included
  double rps = 0;
  double p50_ms = 0;  // of the window's successful requests
  double p99_ms = 0;
  uint64_t errors = 0;
};

// Samples bucketed by completion time into `window_s` windows from 0 to the last answer.
std::vector<BenchWindow> bench_windows(const std::vector<BenchSample>& samples, double window_s);

// Board power over the run from two telemetry snapshots (before and after); nullopt with
// `reason` set when the daemon reports no power.
struct BenchPower {
  std::string source;
  double mean_power_w = 0;
  double energy_j = 0;  // energy the daemon integrated between the snapshots
  double energy_per_image_j = 0;
  std::string method;  // how mean power and energy per image were derived
};
std::optional<BenchPower> bench_power(const v1::TelemetrySnapshot& before, const v1::TelemetrySnapshot& after,
                                      uint64_t ok_images, std::string& reason);

// The server side breakdown (mean/p50/p99 of each Timing stage, mean batch size, modeled energy)
// and the server overhead (client latency - inference_us) of the successful samples.
nlohmann::json server_breakdown(const std::vector<BenchSample>& samples);
nlohmann::json server_overhead(const std::vector<BenchSample>& samples);

}  // namespace tessera::client
