// The report of `tessera bench`: JSON (what --json prints), the text for people, and the
// per-window CSV.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "client/commands/bench_load.h"
#include "client/commands/bench_stats.h"
#include "client/commands/commands.h"
#include "tessera/v1/telemetry.pb.h"

namespace tessera::client {

// What the report says about the run besides its record.
struct BenchRunInfo {
  std::string model;  // the model benchmarked (the daemon's default when --model was not given)
  BenchRunShape shape;
  size_t images = 0;  // images sent round robin
  std::string images_dir;
  std::vector<std::string> image_paths;  // index order, as BenchSample::image counts
  std::string input_datatype;            // KServe: what the input was sent as ("BYTES", "FP32")
};

// The report as JSON: config, request counts, client latency, errors, the server's breakdown and
// overhead (tessera.v1 only: KServe answers carry no timing), power between the telemetry
// snapshots `before` and `after`, each image's top-1 answer, and `windows`.
nlohmann::json bench_report(const BenchArgs& args, const BenchRunInfo& run, const BenchRecord& record,
                            const std::vector<BenchWindow>& windows, const std::optional<v1::TelemetrySnapshot>& before,
                            const std::optional<v1::TelemetrySnapshot>& after);

// The report as text on stdout.
void print_bench_report(const nlohmann::json& report);

// One row per window; false (said on stderr) when the file cannot be written.
bool write_bench_csv(const std::string& path, const std::vector<BenchWindow>& windows);

}  // namespace tessera::client
