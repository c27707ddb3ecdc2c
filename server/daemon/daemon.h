// tesserad's parts wired together: the model repository, the inference queue, the gRPC and HTTP
// servers. main.cc only parses flags and waits for a signal; tests may run a Daemon in-process.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "accel/common/status.h"
#include "accel/device/device_registry.h"
#include "server/batching/in_flight.h"
#include "server/models/model_repository.h"

namespace tessera {

class Admission;
class BearerTokens;
class GrpcServer;
class HttpRoutes;
class HttpServer;
struct HttpSessionLimits;
class InferenceQueue;
class ModelRepository;
class ClassifierService;
class KserveGrpcService;
class TelemetryService;
namespace telemetry {
class PowerSource;
class ServerStats;
class TelemetrySampler;
struct DeviceLabels;
}  // namespace telemetry
namespace kserve {
class SharedMemoryRegistry;
}  // namespace kserve
namespace fleet {
class FleetService;
}

// Every setting of the daemon (flags.h lists them as flags and config keys).
struct DaemonOptions {
  std::filesystem::path models_dir = "models";
  // explicit: the models of models_dir at start, then what the repository API loads and unloads;
  // poll: also rescans models_dir every repository_poll_ms for added, changed and removed folders.
  std::string model_control = "explicit";
  int repository_poll_ms = 1000;
  std::string listen = "127.0.0.1";
  int grpc_port = 50051;  // 0 picks a free port
  int http_port = 8080;   // 0 picks a free port
  int64_t max_image_bytes = 16 << 20;
  int64_t max_image_pixels = 40'000'000;
  // Request bodies all HTTP connections may hold at once (MiB; at least one max_image_bytes).
  int http_body_budget_mb = 64;
  // A KServe JSON infer body: at most this many times its model's FP32 input as JSON (bytes, values).
  int kserve_json_body_multiple = 16;
  // A PNG over this many times the model's input pixels must hold at most max_png_pixels_per_byte
  // pixels per encoded byte (its decode cost bounded by the model's need or the sender's bytes);
  // a JPEG is decoded DCT-scaled to the smallest size the model's resize needs.
  double max_image_pixel_ratio = 1024;
  double max_png_pixels_per_byte = 32;
  std::filesystem::path web_root = "web";
  int workers = 2;  // batches in flight at once, per device instance
  // A delay-0 model's request that finds the daemon idle runs on the thread that received it.
  bool inline_when_idle = true;
  // A due batch that is not full waits, growing, while its model's device instances are busy.
  bool grow_batch_while_busy = true;
  int http_threads = 2;
  std::string precision = "int8";             // int8 (fabric + host pipeline) or fp32 (host only)
  DeviceOptions device;                       // --device auto|emu|xrt, --devices, --xclbin, --board, --emu-faults
  int device_timeout_ms = 10000;              // a device run taking longer is aborted (device failed)
  int device_max_failures = 3;                // failures in a row before the device is out of service
  BatchPolicy batching;                       // defaults for models whose model.toml has no [batching]
  std::string objective = "energy";           // what the tile planner minimises: time, bytes or energy
  std::filesystem::path plan_cache;           // where plans are cached; empty: memory only
  double drain_timeout_s = 10;                // SIGTERM: how long queued and running requests get
  std::string log_format = "text";            // text | json
  int telemetry_interval_ms = 1000;           // power/temperature sampling period
  std::filesystem::path sysfs_root = "/sys";  // hwmon rails and thermal zones (tests: a fake tree)
  // Which hwmon power monitors each device instance reads, "I=MATCH[+MATCH...],..."
  // (telemetry::parse_hwmon_rails); empty: the first instance reads them all (one board's rails).
  std::string hwmon_rails;
  // TLS on both ports when a certificate and key are given (PEM); the client CA makes it mutual.
  std::filesystem::path tls_cert, tls_key, tls_client_ca;
  std::filesystem::path auth_tokens;      // bearer tokens, one per line; empty: none needed
  int http_read_timeout_s = 30;           // per request, idle keep-alive, TLS handshake
  int http_write_timeout_s = 30;          // per response and per server-sent event
  int http_max_in_flight = 8;             // pipelined requests read but not answered, per connection
  int64_t max_connections = 0;            // HTTP connections open at once; 0: from the fd limit (fd_limit.h)
  int grpc_max_concurrent_streams = 100;  // per connection
  std::string peers;                      // other daemons' HTTP addresses for /v1/fleet: "HOST:PORT,..."
  int peer_timeout_ms = 1500;             // /v1/fleet: how long each peer gets to answer
  // KServe system shared memory: off unless allowed (a client then reads and writes shm objects
  // with the daemon's rights); at most this many regions and MiB registered at once.
  bool allow_client_shm = false;
  int shm_max_regions = 64;
  int shm_max_mb = 1024;
};

class Daemon {
 public:
  // Loads the models and starts both servers; the first error stops the start and says why.
  static Result<std::unique_ptr<Daemon>> start(const DaemonOptions& options);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  int grpc_port() const;
  int http_port() const;
  const ModelRepository& models() const { return *models_; }
  // "tesserad: listening grpc=127.0.0.1:50051 http=127.0.0.1:8080 models=fashion-mnist"
  std::string listening_line() const;

  // Drains: refuses new work (gRPC with GOAWAY, HTTP with 503 and "Connection: close"), lets
  // admitted requests finish within --drain-timeout, closes each HTTP connection after its last
  // answer, then stops the servers. Idempotent.
  void stop();

 private:
  struct Startup;

  explicit Daemon(const DaemonOptions& options);

  // start()'s steps, in order; each logs what it set up.
  // TLS material, fleet peers and bearer tokens.
  Status load_security(Startup& startup);
  // The device and the models on it.
  Status load_models(Startup& startup);
  // Parses --hwmon-rails into hwmon_rails_; each index must be an opened device instance.
  Status check_hwmon_rails();
  // The power sampler, the stats, the inference queue, admission and the telemetry service.
  void start_telemetry_and_queue();
  // The power sources of one device instance, in priority order; sets labels.static_watts.
  std::vector<std::unique_ptr<telemetry::PowerSource>> power_sources(const DeviceSupervisor& device,
                                                                     telemetry::DeviceLabels& labels);
  // The gRPC services and their server.
  Status start_grpc(const Startup& startup);
  // Logs and counts a device instance's failures and recoveries; readiness follows the devices.
  void on_device_event(unsigned device, const DeviceEvent& event);
  // Readiness (gRPC health, tessera_ready): while a device serves, unless draining; health_mu_ held.
  void apply_readiness();
  // Draining: waits until no gRPC call has been refused for a short while (callers have stopped),
  // at most until `deadline`.
  void wait_for_grpc_quiet(std::chrono::steady_clock::time_point deadline) const;
  // The fleet service, the HTTP routes and their server.
  Status start_http(Startup& startup);
  // The request-body budget of every HTTP connection and the routes' KServe JSON limit.
  void set_body_limits(HttpSessionLimits& limits);

  const DaemonOptions options_;
  std::unique_ptr<ModelRepository> models_;
  std::unique_ptr<BearerTokens> tokens_;  // null: no token needed; outlives the routes (gRPC keeps a copy)
  // Declared before the queue: the queue's workers report to the stats until the queue stops.
  std::vector<std::unique_ptr<telemetry::TelemetrySampler>> samplers_;  // one per device instance
  std::map<unsigned, std::vector<std::string>> hwmon_rails_;            // options_.hwmon_rails, parsed
  std::unique_ptr<telemetry::ServerStats> stats_;
  std::unique_ptr<InferenceQueue> queue_;
  // The one in-flight count of every door (gRPC, KServe, HTTP, the telemetry streams) and the one
  // admission over it: the drain refuses and waits here once. Both outlive the doors below.
  InFlightTracker in_flight_;
  std::unique_ptr<Admission> admission_;
  std::unique_ptr<fleet::FleetService> fleet_;         // its thread answers /v1/fleet; stopped before the HTTP side
  std::unique_ptr<kserve::SharedMemoryRegistry> shm_;  // KServe's shared-memory regions (REST and gRPC)
  std::unique_ptr<HttpRoutes> routes_;
  std::unique_ptr<ClassifierService> classifier_;
  std::unique_ptr<TelemetryService> telemetry_;
  std::unique_ptr<KserveGrpcService> kserve_;
  std::unique_ptr<GrpcServer> grpc_;
  std::unique_ptr<HttpServer> http_;
  std::mutex health_mu_;  // stopped_ and the readiness the device's events set
  bool stopped_ = false;
};

}  // namespace tessera
