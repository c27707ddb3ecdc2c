#include "server/daemon/daemon.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <optional>
#include <thread>

#include "accel/plan/board_profile.h"
#include "accel/plan/plan_cache.h"
#include "server/auth/bearer_tokens.h"
#include "server/auth/grpc_token_credentials.h"
#include "server/batching/admission.h"
#include "server/batching/inference_queue.h"
#include "server/daemon/fd_limit.h"
#include "server/fleet/fleet_service.h"
#include "server/fleet/peer_list.h"
#include "server/grpc/classifier_service.h"
#include "server/grpc/grpc_server.h"
#include "server/grpc/kserve_grpc_service.h"
#include "server/grpc/telemetry_service.h"
#include "server/http/http_server.h"
#include "server/kserve/shared_memory.h"
#include "server/models/model_repository.h"
#include "server/routes/http_routes.h"
#include "server/telemetry/device_source.h"
#include "server/telemetry/hwmon_source.h"
#include "server/telemetry/model_source.h"
#include "server/telemetry/sampler.h"
#include "server/telemetry/server_stats.h"
#include "server/tls/tls_config.h"

namespace tessera {
namespace {

// Room for the rest of a ClassifyRequest beyond the image bytes.
constexpr int64_t kGrpcHeadroomBytes = 64 << 10;
// When every admitted request is answered, gRPC and HTTP get this long to flush the last answers
// before they cut the connections left (idle clients would otherwise hold them to the deadline).
constexpr std::chrono::milliseconds kFlushGrace{250};
// gRPC 1.51 cancels (CANCELLED, an ambiguous answer) the calls that arrive once its Shutdown has
// begun, so draining refuses calls itself first (UNAVAILABLE, never admitted) and shuts gRPC down
// (GOAWAY) only when no call has come for this long.
constexpr std::chrono::milliseconds kGrpcQuiet{200};

}  // namespace

Daemon::Daemon(const DaemonOptions& options) : options_(options) {}

// What the start's steps hand on to each other.
struct Daemon::Startup {
  std::optional<TlsMaterial> tls;
  std::shared_ptr<boost::asio::ssl::context> https;  // set when `tls` is
  std::vector<fleet::PeerAddress> peers;
  EngineOptions engine_options;  // .instances: the device instances, one supervisor each
};

Result<std::unique_ptr<Daemon>> Daemon::start(const DaemonOptions& options) {
  std::unique_ptr<Daemon> d(new Daemon(options));
  Startup startup;
  // TLS files and tokens first: a bad file fails the start before anything slow.
  TESSERA_RETURN_IF_ERROR(d->load_security(startup));
  TESSERA_RETURN_IF_ERROR(d->load_models(startup));
  d->start_telemetry_and_queue();
  TESSERA_RETURN_IF_ERROR(d->start_grpc(startup));
  TESSERA_RETURN_IF_ERROR(d->start_http(startup));
  {
    std::lock_guard lock(d->health_mu_);
    d->apply_readiness();
  }
  for (const auto& device : d->models_->devices()) {
    device->set_listener([daemon = d.get(), index = device->index()](const DeviceEvent& event) {
      daemon->on_device_event(index, event);
    });
  }
  return d;
}

Status Daemon::load_security(Startup& startup) {
  TlsFiles tls_files;
  tls_files.cert = options_.tls_cert;
  tls_files.key = options_.tls_key;
  tls_files.client_ca = options_.tls_client_ca;
  TESSERA_ASSIGN_OR_RETURN(startup.tls, load_tls_material(tls_files));
  if (startup.tls) {
    TESSERA_ASSIGN_OR_RETURN(startup.https, make_https_context(*startup.tls));
  }
  TESSERA_ASSIGN_OR_RETURN(startup.peers, fleet::parse_peers(options_.peers));
  if (!options_.auth_tokens.empty()) {
    TESSERA_ASSIGN_OR_RETURN(BearerTokens tokens, BearerTokens::load(options_.auth_tokens));
    tokens_ = std::make_unique<BearerTokens>(std::move(tokens));
  }
  spdlog::info("security: {}; {}",
               !startup.tls            ? "plain TCP (no TLS)"
               : startup.tls->mutual() ? "mutual TLS"
                                       : "TLS",
               tokens_ ? std::to_string(tokens_->size()) + " bearer token(s) from " + options_.auth_tokens.string()
                       : std::string("no bearer tokens"));
  spdlog::info(
      "limits: http read timeout {} s, write timeout {} s, {} requests in flight per connection; "
      "grpc {} concurrent streams per connection",
      options_.http_read_timeout_s, options_.http_write_timeout_s, options_.http_max_in_flight,
      options_.grpc_max_concurrent_streams);
  return Status::ok();
}

Status Daemon::load_models(Startup& startup) {
  EngineOptions& engine_options = startup.engine_options;
  TESSERA_ASSIGN_OR_RETURN(engine_options.precision, parse_precision(options_.precision));
  TESSERA_ASSIGN_OR_RETURN(engine_options.plan.objective, plan::parse_objective(options_.objective));
  engine_options.plan_cache = std::make_shared<plan::PlanCache>(options_.plan_cache);
  // Opened whatever --precision says: a model.toml may ask for int8 on its own.
  std::string note;
  TESSERA_ASSIGN_OR_RETURN(auto devices, open_devices(options_.device, &note));
  for (size_t start = 0; start < note.size();) {  // a line per device
    const size_t end = std::min(note.find('\n', start), note.size());
    spdlog::info("{}", note.substr(start, end - start));
    start = end + 1;
  }
  engine_options.device_timeout = std::chrono::milliseconds(options_.device_timeout_ms);
  for (OpenedDevice& opened : devices) {
    engine_options.instances.push_back(std::make_shared<DeviceSupervisor>(
        std::shared_ptr<Device>(std::move(opened.device)), options_.device_max_failures, opened.index));
    const DeviceInfo info = engine_options.instances.back()->device().info();
    spdlog::info("device {} ({}): {} (board {}; {}); run timeout {} ms, out of service after {} failures in a row",
                 opened.index, info.kind, info.name, info.board, info.detail, options_.device_timeout_ms,
                 options_.device_max_failures);
  }
  engine_options.supervisor = engine_options.instances.front();
  engine_options.device = engine_options.supervisor->shared_device();
  spdlog::info("tile plans: objective {}, cache {}", options_.objective,
               options_.plan_cache.empty() ? std::string("in memory") : options_.plan_cache.string());
  RepositoryOptions repository;
  repository.engine = engine_options;
  repository.batching = options_.batching;
  if (options_.model_control == "poll")
    repository.poll_interval = std::chrono::milliseconds(options_.repository_poll_ms);
  spdlog::info("model control: {}{}", options_.model_control,
               options_.model_control == "poll" ? " (" + options_.models_dir.string() + " rescanned every " +
                                                      std::to_string(options_.repository_poll_ms) + " ms)"
                                                : std::string());
  TESSERA_ASSIGN_OR_RETURN(models_, ModelRepository::load(options_.models_dir, repository));
  return check_hwmon_rails();
}

Status Daemon::check_hwmon_rails() {
  TESSERA_ASSIGN_OR_RETURN(hwmon_rails_, telemetry::parse_hwmon_rails(options_.hwmon_rails));
  for (const auto& [index, monitors] : hwmon_rails_) {
    const auto& devices = models_->devices();
    if (std::none_of(devices.begin(), devices.end(), [index = index](const auto& d) { return d->index() == index; })) {
      return Status::invalid_argument("--hwmon-rails names device " + std::to_string(index) +
                                      ", which --devices does not open");
    }
  }
  return Status::ok();
}

std::vector<std::unique_ptr<telemetry::PowerSource>> Daemon::power_sources(const DeviceSupervisor& device,
                                                                           telemetry::DeviceLabels& labels) {
  // In priority order: the device's own sensors (XRT cards), its hwmon rails (--hwmon-rails says
  // which are whose; without it the first instance reads them all: one ZynqMP board's rails), and
  // on the emulator the board profile's power model.
  std::vector<std::unique_ptr<telemetry::PowerSource>> sources;
  sources.push_back(std::make_unique<telemetry::DeviceSource>(device.shared_device()));
  const auto own_rails = hwmon_rails_.find(device.index());
  if (hwmon_rails_.empty() ? device.index() == models_->devices().front()->index() : own_rails != hwmon_rails_.end()) {
    telemetry::HwmonOptions hwmon;
    hwmon.root = options_.sysfs_root;
    if (own_rails != hwmon_rails_.end()) hwmon.monitors = own_rails->second;
    sources.push_back(std::make_unique<telemetry::HwmonSource>(hwmon));
  }
  if (labels.kind == "emu") {
    auto board = plan::load_board_profile(labels.board);
    if (board) {
      labels.static_watts = board->static_watts;
      sources.push_back(std::make_unique<telemetry::ModelSource>(board->static_watts, [this, index = device.index()] {
        return stats_ ? stats_->modeled_dynamic_joules(index) : 0.0;
      }));
    } else {
      spdlog::warn("telemetry: no power model: {}", board.status().message());
    }
  }
  return sources;
}

void Daemon::start_telemetry_and_queue() {
  telemetry::TelemetrySamplerOptions sampler_options;
  sampler_options.interval = std::chrono::milliseconds(options_.telemetry_interval_ms);
  std::vector<telemetry::DeviceLabels> device_labels;
  for (const auto& device : models_->devices()) {
    const DeviceInfo info = device->device().info();
    telemetry::DeviceLabels labels{device->index(), info.kind, info.name, info.board, 0, nullptr, device.get()};
    auto sources = power_sources(*device, labels);
    samplers_.push_back(std::make_unique<telemetry::TelemetrySampler>(std::move(sources), sampler_options));
    labels.sampler = samplers_.back().get();
    device_labels.push_back(std::move(labels));
  }

  InferenceQueueOptions queue_options;
  // Enough batches in flight to keep every device instance's pipeline full.
  queue_options.workers = options_.workers * static_cast<int>(std::max<size_t>(1, models_->devices().size()));
  // The queue reports to the stats and the stats read the queue's depths: stats first, then the
  // queue, then the stats learn of the queue (before any job).
  stats_ = std::make_unique<telemetry::ServerStats>(models_.get(), std::move(device_labels), nullptr);
  models_->set_on_loaded([stats = stats_.get()](const ServedModel& model) { stats->add_model(model.name()); });
  queue_options.observer = stats_.get();
  queue_options.run_inline_when_idle = options_.inline_when_idle;
  queue_options.grow_while_busy = options_.grow_batch_while_busy;
  queue_ = std::make_unique<InferenceQueue>(queue_options);
  stats_->set_queue(queue_.get());
  DecodeLimits decode_limits;
  decode_limits.max_bytes = options_.max_image_bytes;
  decode_limits.max_pixels = options_.max_image_pixels;
  decode_limits.max_pixel_ratio = options_.max_image_pixel_ratio;
  decode_limits.max_png_pixels_per_byte = options_.max_png_pixels_per_byte;
  admission_ = std::make_unique<Admission>(*models_, *queue_, in_flight_, decode_limits);
  for (auto& sampler : samplers_) sampler->start();
  telemetry_ = std::make_unique<TelemetryService>(*stats_, in_flight_);
}

Status Daemon::start_grpc(const Startup& startup) {
  classifier_ = std::make_unique<ClassifierService>(*models_, *admission_);
  kserve::SharedMemoryLimits shm_limits;
  shm_limits.allowed = options_.allow_client_shm;
  shm_limits.max_regions = static_cast<size_t>(options_.shm_max_regions);
  shm_limits.max_bytes = static_cast<uint64_t>(options_.shm_max_mb) << 20;
  shm_ = std::make_unique<kserve::SharedMemoryRegistry>(shm_limits);
  if (shm_limits.allowed) {
    spdlog::info("kserve: system shared memory on: at most {} regions, {} MiB", options_.shm_max_regions,
                 options_.shm_max_mb);
  }
  kserve_ = std::make_unique<KserveGrpcService>(*models_, *admission_, shm_.get());
  GrpcServerOptions grpc_options;
  grpc_options.host = options_.listen;
  grpc_options.port = options_.grpc_port;
  grpc_options.health_services = {v1::Classifier::service_full_name(), v1::Telemetry::service_full_name(),
                                  inference::GRPCInferenceService::service_full_name()};
  grpc_options.max_receive_bytes =
      static_cast<int>(std::min<int64_t>(options_.max_image_bytes + kGrpcHeadroomBytes, INT_MAX));
  grpc_options.max_concurrent_streams = options_.grpc_max_concurrent_streams;
  grpc_options.credentials = token_checked_credentials(grpc_core_server_credentials(startup.tls), tokens_.get());
  TESSERA_ASSIGN_OR_RETURN(grpc_,
                           GrpcServer::start(grpc_options, {classifier_.get(), telemetry_.get(), kserve_.get()}));
  return Status::ok();
}

void Daemon::set_body_limits(HttpSessionLimits& limits) {
  // One body of the connection's limit always fits, whatever the budget says.
  const uint64_t budget =
      std::max(static_cast<uint64_t>(options_.http_body_budget_mb) << 20, static_cast<uint64_t>(limits.body_limit));
  limits.body_budget = std::make_shared<BodyBudget>(budget);
  routes_->set_json_body_multiple(static_cast<uint32_t>(options_.kserve_json_body_multiple));
  spdlog::info("limits: http request bodies {} bytes each, {} bytes at once; a KServe JSON body {}x its model's input",
               limits.body_limit, budget, options_.kserve_json_body_multiple);
}

Status Daemon::start_http(Startup& startup) {
  if (!startup.peers.empty()) spdlog::info("fleet: {} peer(s): {}", startup.peers.size(), options_.peers);
  fleet_ = std::make_unique<fleet::FleetService>(std::move(startup.peers),
                                                 std::chrono::milliseconds(options_.peer_timeout_ms), *stats_);
  routes_ =
      std::make_unique<HttpRoutes>(*models_, *admission_, options_.web_root, stats_.get(), tokens_.get(), fleet_.get());
  routes_->set_shared_memory(shm_.get());
  HttpServerOptions http_options;
  http_options.host = options_.listen;
  http_options.port = options_.http_port;
  http_options.threads = options_.http_threads;
  http_options.limits.body_limit = static_cast<uint64_t>(options_.max_image_bytes);
  http_options.limits.read_timeout = std::chrono::seconds(options_.http_read_timeout_s);
  http_options.limits.write_timeout = std::chrono::seconds(options_.http_write_timeout_s);
  http_options.limits.max_in_flight = static_cast<size_t>(options_.http_max_in_flight);
  http_options.tls = startup.https;
  set_body_limits(http_options.limits);
  const uint64_t fds = fd_limit();
  http_options.max_connections =
      options_.max_connections > 0 ? static_cast<size_t>(options_.max_connections) : default_max_connections(fds);
  if (http_options.max_connections >= fds) {
    spdlog::warn("connections: --max-connections {} is not below the file-descriptor limit {}: past it accepts fail",
                 http_options.max_connections, fds);
  }
  spdlog::info("connections: HTTP at most {} open at once{}, file-descriptor limit {}", http_options.max_connections,
               options_.max_connections > 0 ? "" : " (from the fd limit)", fds);
  TESSERA_ASSIGN_OR_RETURN(http_, HttpServer::start(http_options, *routes_));
  stats_->set_connection_figures([http = http_.get()] {
    return telemetry::ConnectionFigures{http->open_connections(), http->refused_connections()};
  });
  fleet_->set_self_target(join_host_port(options_.listen, http_->port()));
  return Status::ok();
}

void Daemon::on_device_event(unsigned device, const DeviceEvent& event) {
  const DeviceHealth& health = event.health;
  // "device" when there is one, "device 1" among several.
  const std::string who = models_->devices().size() > 1 ? "device " + std::to_string(device) : "device";
  switch (event.kind) {
    case DeviceEvent::Kind::kFailed:
      spdlog::error("{} error #{}: {}; it is reset and its programs reloaded", who, health.errors, event.message);
      break;
    case DeviceEvent::Kind::kRecovered:
      spdlog::info("{} recovered (reset #{}): {}; serving again", who, health.resets, event.message);
      break;
    case DeviceEvent::Kind::kOutOfService:
      spdlog::critical("{} error #{}: {}; {} out of service: {}", who, health.errors, event.message, who,
                       health.reason);
      break;
  }
  if (event.kind != DeviceEvent::Kind::kRecovered && stats_) stats_->on_device_error(device);
  std::lock_guard lock(health_mu_);
  apply_readiness();
}

void Daemon::apply_readiness() {
  if (stopped_) return;  // draining: stop() turned readiness off for good
  const bool ready = models_->device_ready().is_ok();
  if (stats_) stats_->set_ready(ready);
  if (grpc_) grpc_->set_serving(ready);
}

void Daemon::wait_for_grpc_quiet(std::chrono::steady_clock::time_point deadline) const {
  for (;;) {
    const auto quiet_at = std::min(in_flight_.last_refusal() + kGrpcQuiet, deadline);
    if (std::chrono::steady_clock::now() >= quiet_at) return;
    std::this_thread::sleep_until(quiet_at);
  }
}

Daemon::~Daemon() { stop(); }

int Daemon::grpc_port() const { return grpc_ ? grpc_->port() : 0; }
int Daemon::http_port() const { return http_ ? http_->port() : 0; }

std::string Daemon::listening_line() const {
  std::string names;
  for (const std::string& name : models_->names()) names += (names.empty() ? "" : ",") + name;
  return "tesserad: listening grpc=" + join_host_port(options_.listen, grpc_port()) +
         " http=" + join_host_port(options_.listen, http_port()) + " models=" + names;
}

void Daemon::stop() {
  {
    std::lock_guard lock(health_mu_);
    if (stopped_) return;
    stopped_ = true;
    // New requests are refused (UNAVAILABLE / 503) while the running ones finish.
    if (stats_) stats_->set_ready(false);
    if (grpc_) grpc_->set_serving(false);
  }
  const auto drain = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(options_.drain_timeout_s));
  const auto deadline = std::chrono::steady_clock::now() + drain;
  // HTTP: no new connection; every answer from now on says "Connection: close" and closes its
  // connection once written, after the answers to the requests it had already read. Before the
  // admission refuses anything, so that no 503 goes out on a connection left open.
  if (http_) http_->start_draining();
  // One admission serves every door: from here on each refuses new work (UNAVAILABLE / 503).
  in_flight_.start_draining();
  if (telemetry_) telemetry_->end_watch_streams();  // now, not at their next tick
  if (routes_) routes_->end_event_streams();        // SSE streams end now, not at their next tick
  if (!in_flight_.wait_until_idle(deadline)) {
    spdlog::warn("shutdown: {} request(s) still running after {} s are cut off", in_flight_.running(),
                 options_.drain_timeout_s);
  }
  if (grpc_) {
    wait_for_grpc_quiet(deadline);
    grpc_->shutdown(kFlushGrace);
  }
  // The last HTTP answers go out, and a request body still coming in is read and answered (the
  // drain's refusal), until the drain's deadline; then idle connections (a client between
  // requests) are closed.
  if (http_ &&
      !http_->wait_until_closed(kFlushGrace, std::max(std::chrono::steady_clock::now() + kFlushGrace, deadline))) {
    spdlog::info("shutdown: {} idle HTTP connection(s) closed", http_->open_connections());
  }
  if (queue_) queue_->stop();  // answers what is still queued
  // An engine may still be resetting the device: its events no longer reach the servers.
  if (models_) {
    for (const auto& device : models_->devices()) device->set_listener(nullptr);
    models_->set_on_loaded(nullptr);  // a load finishing later no longer reaches the stats
  }
  if (fleet_) fleet_->stop();  // before the HTTP side: its callbacks write through HTTP sessions
  if (http_) http_->stop();
  for (auto& sampler : samplers_) sampler->stop();
}

}  // namespace tessera
