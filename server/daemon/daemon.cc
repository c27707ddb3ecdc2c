#include "server/daemon/daemon.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <thread>

#include "accel/plan/board_profile.h"
#include "accel/plan/plan_cache.h"
#include "server/auth/bearer_tokens.h"
#include "server/batching/inference_queue.h"
#include "server/fleet/fleet_service.h"
#include "server/fleet/peer_list.h"
#include "server/grpc/classifier_service.h"
#include "server/grpc/server.h"
#include "server/http/server.h"
#include "server/kserve/kserve_grpc_service.h"
#include "server/models/model_repository.h"
#include "server/routes/http_routes.h"
#include "server/telemetry/device_source.h"
#include "server/telemetry/hwmon_source.h"
#include "server/telemetry/model_source.h"
#include "server/telemetry/sampler.h"
#include "server/telemetry/server_stats.h"
#include "server/telemetry/telemetry_service.h"
#include "server/tls/tls_config.h"

namespace tessera {
namespace {

// Room for the rest of a ClassifyRequest beyond the image bytes.
constexpr int64_t kGrpcHeadroomBytes = 64 << 10;
// Then gRPC gets this long to flush the last answers before it cuts the connections (idle
// clients would otherwise hold its shutdown for the whole grace period).
constexpr std::chrono::milliseconds kFlushGrace{250};

}  // namespace

Daemon::Daemon(const DaemonOptions& options) : options_(options) {}

Result<std::unique_ptr<Daemon>> Daemon::start(const DaemonOptions& options) {
  std::unique_ptr<Daemon> d(new Daemon(options));
  // TLS files and tokens first: a bad file fails the start before anything slow.
  TlsFiles tls_files;
  tls_files.cert = options.tls_cert;
  tls_files.key = options.tls_key;
  tls_files.client_ca = options.tls_client_ca;
  TESSERA_ASSIGN_OR_RETURN(const std::optional<TlsMaterial> tls, load_tls_material(tls_files));
  std::shared_ptr<boost::asio::ssl::context> https;
  if (tls) {
    TESSERA_ASSIGN_OR_RETURN(https, make_https_context(*tls));
  }
  TESSERA_ASSIGN_OR_RETURN(std::vector<fleet::PeerAddress> peers, fleet::parse_peers(options.peers));
  if (!options.auth_tokens.empty()) {
    TESSERA_ASSIGN_OR_RETURN(BearerTokens tokens, BearerTokens::load(options.auth_tokens));
    d->tokens_ = std::make_unique<BearerTokens>(std::move(tokens));
  }
  spdlog::info("security: {}; {}",
               !tls            ? "plain TCP (no TLS)"
               : tls->mutual() ? "mutual TLS"
                               : "TLS",
               d->tokens_ ? std::to_string(d->tokens_->size()) + " bearer token(s) from " + options.auth_tokens.string()
                          : std::string("no bearer tokens"));
  spdlog::info(
      "limits: http read timeout {} s, write timeout {} s, {} requests in flight per connection; "
      "grpc {} concurrent streams per connection",
      options.http_read_timeout_s, options.http_write_timeout_s, options.http_max_in_flight,
      options.grpc_max_concurrent_streams);
  EngineOptions engine_options;
  TESSERA_ASSIGN_OR_RETURN(engine_options.precision, parse_precision(options.precision));
  TESSERA_ASSIGN_OR_RETURN(engine_options.plan.objective, plan::parse_objective(options.objective));
  engine_options.plan_cache = std::make_shared<plan::PlanCache>(options.plan_cache);
  // Opened whatever --precision says: a model.toml may ask for int8 on its own.
  std::string note;
  TESSERA_ASSIGN_OR_RETURN(engine_options.device, open_device(options.device, &note));
  if (!note.empty()) spdlog::info("{}", note);
  const DeviceInfo info = engine_options.device->info();
  spdlog::info("device {}: {} (board {}; {})", info.kind, info.name, info.board, info.detail);
  spdlog::info("tile plans: objective {}, cache {}", options.objective,
               options.plan_cache.empty() ? std::string("in memory") : options.plan_cache.string());
  TESSERA_ASSIGN_OR_RETURN(d->models_, ModelRepository::load(options.models_dir, engine_options, options.batching));

  // Power sources in priority order: the device's own sensors (XRT cards), the board's hwmon
  // rails (ZynqMP boards), and on the emulator the board profile's power model.
  telemetry::DeviceLabels device_labels{info.kind, info.name, info.board, 0};
  std::vector<std::unique_ptr<telemetry::PowerSource>> sources;
  sources.push_back(std::make_unique<telemetry::DeviceSource>(engine_options.device));
  telemetry::HwmonOptions hwmon;
  hwmon.root = options.sysfs_root;
  sources.push_back(std::make_unique<telemetry::HwmonSource>(hwmon));
  if (info.kind == "emu") {
    auto board = plan::load_board_profile(info.board);
    if (board) {
      device_labels.static_watts = board->static_watts;
      Daemon* self = d.get();
      sources.push_back(std::make_unique<telemetry::ModelSource>(
          board->static_watts, [self] { return self->stats_ ? self->stats_->modeled_dynamic_joules() : 0.0; }));
    } else {
      spdlog::warn("telemetry: no power model: {}", board.status().message());
    }
  }
  telemetry::TelemetrySamplerOptions sampler_options;
  sampler_options.interval = std::chrono::milliseconds(options.telemetry_interval_ms);
  d->sampler_ = std::make_unique<telemetry::TelemetrySampler>(std::move(sources), sampler_options);

  InferenceQueueOptions queue_options;
  queue_options.workers = options.workers;
  queue_options.decode_limits.max_bytes = options.max_image_bytes;
  queue_options.decode_limits.max_pixels = options.max_image_pixels;
  // The queue reports to the stats and the stats read the queue's depths: stats first, then the
  // queue, then the stats learn of the queue (before any job).
  std::vector<const ServedModel*> served;
  for (const auto& m : d->models_->models()) served.push_back(m.get());
  d->stats_ = std::make_unique<telemetry::ServerStats>(served, device_labels, nullptr, d->sampler_.get());
  queue_options.observer = d->stats_.get();
  d->queue_ = std::make_unique<InferenceQueue>(queue_options);
  d->stats_->set_queue(d->queue_.get());
  d->sampler_->start();
  d->telemetry_ = std::make_unique<TelemetryService>(*d->stats_, d->tokens_.get());

  d->classifier_ =
      std::make_unique<ClassifierService>(*d->models_, *d->queue_, options.max_image_bytes, d->tokens_.get());
  d->kserve_ = std::make_unique<kserve::KserveGrpcService>(*d->models_, *d->queue_, d->tokens_.get());
  GrpcServerOptions grpc_options;
  grpc_options.host = options.listen;
  grpc_options.port = options.grpc_port;
  grpc_options.health_services = {v1::Classifier::service_full_name(), v1::Telemetry::service_full_name(),
                                  inference::GRPCInferenceService::service_full_name()};
  grpc_options.max_receive_bytes =
      static_cast<int>(std::min<int64_t>(options.max_image_bytes + kGrpcHeadroomBytes, INT_MAX));
  grpc_options.max_concurrent_streams = options.grpc_max_concurrent_streams;
  grpc_options.credentials = grpc_server_credentials(tls);
  TESSERA_ASSIGN_OR_RETURN(
      d->grpc_, GrpcServer::start(grpc_options, {d->classifier_.get(), d->telemetry_.get(), d->kserve_.get()}));

  if (!peers.empty()) spdlog::info("fleet: {} peer(s): {}", peers.size(), options.peers);
  d->fleet_ = std::make_unique<fleet::FleetService>(std::move(peers),
                                                    std::chrono::milliseconds(options.peer_timeout_ms), *d->stats_);
  d->routes_ = std::make_unique<HttpRoutes>(*d->models_, *d->queue_, options.web_root, d->stats_.get(),
                                            d->tokens_.get(), d->fleet_.get());
  HttpServerOptions http_options;
  http_options.host = options.listen;
  http_options.port = options.http_port;
  http_options.threads = options.http_threads;
  http_options.limits.body_limit = static_cast<uint64_t>(options.max_image_bytes);
  http_options.limits.read_timeout = std::chrono::seconds(options.http_read_timeout_s);
  http_options.limits.write_timeout = std::chrono::seconds(options.http_write_timeout_s);
  http_options.limits.max_in_flight = static_cast<size_t>(options.http_max_in_flight);
  http_options.tls = https;
  TESSERA_ASSIGN_OR_RETURN(d->http_, HttpServer::start(http_options, *d->routes_));
  d->fleet_->set_self_target(join_host_port(options.listen, d->http_->port()));
  d->stats_->set_ready(true);
  return d;
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
  if (stopped_) return;
  stopped_ = true;
  // New requests are refused (UNAVAILABLE / 503) while the running ones finish.
  if (stats_) stats_->set_ready(false);
  if (grpc_) grpc_->set_serving(false);
  if (telemetry_) telemetry_->in_flight().start_draining();  // watch streams end at their next tick
  if (http_) http_->stop_accepting();
  if (classifier_) classifier_->in_flight().start_draining();
  if (kserve_) kserve_->in_flight().start_draining();
  if (routes_) routes_->in_flight().start_draining();
  if (routes_) routes_->end_event_streams();  // SSE streams end now, not at their next tick
  const bool http_busy = routes_ && routes_->in_flight().running() > 0;
  const auto drain = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(options_.drain_timeout_s));
  const auto deadline = std::chrono::steady_clock::now() + drain;
  const bool idle = (!classifier_ || classifier_->in_flight().wait_until_idle(deadline)) &&
                    (!kserve_ || kserve_->in_flight().wait_until_idle(deadline)) &&
                    (!routes_ || routes_->in_flight().wait_until_idle(deadline));
  if (!idle) spdlog::warn("shutdown: requests still running after {} s are cut off", options_.drain_timeout_s);
  if (grpc_) grpc_->shutdown(kFlushGrace);
  if (queue_) queue_->stop();  // answers what is still queued
  if (fleet_) fleet_->stop();  // before the HTTP side: its callbacks write through HTTP sessions
  // HTTP answers are written on the io threads: give the last ones time to go out.
  if (http_busy) std::this_thread::sleep_for(kFlushGrace);
  if (http_) http_->stop();
  if (sampler_) sampler_->stop();
}

}  // namespace tessera
