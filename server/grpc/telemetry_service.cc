#include "server/grpc/telemetry_service.h"

#include <grpcpp/alarm.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>

#include "server/grpc/tsan_handoff.h"

namespace tessera {
namespace {

constexpr uint32_t kDefaultIntervalMs = 1000;
constexpr uint32_t kMinIntervalMs = 50;
constexpr uint32_t kMaxIntervalMs = 60'000;

void latency_to_proto(const telemetry::StageLatency& l, v1::StageLatency& out) {
  out.set_stage(l.stage);
  out.set_p50_us(l.p50_us);
  out.set_p90_us(l.p90_us);
  out.set_p99_us(l.p99_us);
  out.set_max_us(l.max_us);
  out.set_count(l.count);
}

// The alarm that paces one watch stream. Shared with the drain's wake function, which may run
// after the stream ended: stop() then finds nothing armed. Once stopped, arm() refuses, so a cancel
// or a drain that comes while a write is in flight is not lost to an alarm set after it.
class WatchPacer {
 public:
  bool arm(std::chrono::system_clock::time_point deadline, std::function<void(bool)> callback) {
    std::lock_guard lock(mu_);
    if (stopped_) return false;
    alarm_.Set(deadline, std::move(callback));
    return true;
  }
  // The armed alarm's callback runs now with fired = false; later arm() calls refuse.
  void stop() {
    std::lock_guard lock(mu_);
    stopped_ = true;
    alarm_.Cancel();
  }

 private:
  std::mutex mu_;
  bool stopped_ = false;
  grpc::Alarm alarm_;
};

// Sends a snapshot, waits an interval on an alarm, sends the next; ends on cancel, on the count,
// or at once when the service drains (with OK). Deletes itself in OnDone.
class WatchReactor final : public grpc::ServerWriteReactor<v1::TelemetrySnapshot> {
 public:
  WatchReactor(const telemetry::ServerStats& stats, InFlightTracker& in_flight, EventStreamHub& drains,
               uint32_t interval_ms, uint32_t max_snapshots)
      : stats_(stats), in_flight_(in_flight), drains_(drains), interval_(interval_ms), max_(max_snapshots) {
    drain_id_ = drains_.add([pacer = pacer_] { pacer->stop(); });
    send();
  }

  void OnWriteDone(bool ok) override {
    back_from_grpc(this);
    if (!ok) return finish(grpc::Status(grpc::StatusCode::CANCELLED, "the client went away"));
    if (max_ != 0 && sent_ >= max_) return finish(grpc::Status::OK);
    // The alarm's callback runs on a gRPC thread; the call is not finished until it ran.
    handed_to_grpc(this);
    const bool armed = pacer_->arm(std::chrono::system_clock::now() + interval_, [this](bool fired) {
      back_from_grpc(this);
      if (in_flight_.draining()) return finish(grpc::Status::OK);
      if (!fired) return finish(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled"));
      send();
    });
    if (!armed) finish(stopped_status());
  }

  void OnCancel() override {
    back_from_grpc(this);
    pacer_->stop();
  }

  void OnDone() override {
    back_from_grpc(this);
    drains_.remove(drain_id_);
    in_flight_.end();
    delete this;
  }

 private:
  grpc::Status stopped_status() const {
    if (in_flight_.draining()) return grpc::Status::OK;
    return {grpc::StatusCode::CANCELLED, "cancelled"};
  }

  void send() {
    snapshot_.Clear();
    to_proto(stats_.snapshot(), snapshot_);
    ++sent_;
    handed_to_grpc(this);
    StartWrite(&snapshot_);
  }

  void finish(grpc::Status status) {
    if (finished_.exchange(true)) return;
    handed_to_grpc(this);
    Finish(std::move(status));
  }

  const telemetry::ServerStats& stats_;
  InFlightTracker& in_flight_;
  EventStreamHub& drains_;
  const std::chrono::milliseconds interval_;
  const uint32_t max_;
  uint32_t sent_ = 0;
  uint64_t drain_id_ = 0;
  v1::TelemetrySnapshot snapshot_;
  std::shared_ptr<WatchPacer> pacer_ = std::make_shared<WatchPacer>();
  std::atomic<bool> finished_{false};
};

void device_to_proto(const telemetry::DeviceStats& d, v1::DeviceTelemetry& out) {
  out.set_index(d.index);
  out.set_kind(d.kind);
  out.set_name(d.name);
  out.set_board(d.board);
  out.set_state(d.state);
  if (d.power_watts) out.set_power_watts(*d.power_watts);
  out.set_power_source(d.power_source);
  out.set_energy_joules(d.energy_joules);
  if (d.temperature_c) out.set_temperature_c(*d.temperature_c);
  out.set_fabric_utilization(d.fabric_utilization);
  out.set_images_per_second(d.images_per_second);
  out.set_images(d.images);
  out.set_errors(d.errors);
}

}  // namespace

void to_proto(const telemetry::TelemetrySnapshot& s, v1::TelemetrySnapshot& out) {
  out.set_time_unix_ms(std::chrono::duration_cast<std::chrono::milliseconds>(s.time.time_since_epoch()).count());
  out.set_device_kind(s.device_kind);
  out.set_device_name(s.device_name);
  out.set_board(s.board);
  if (s.power_watts) out.set_power_watts(*s.power_watts);
  out.set_power_source(s.power_source);
  out.set_energy_joules(s.energy_joules);
  if (s.temperature_c) out.set_temperature_c(*s.temperature_c);
  out.set_temperature_source(s.temperature_source);
  for (const auto& [rail, watts] : s.rails_watts) (*out.mutable_rails_watts())[rail] = watts;
  out.set_fabric_utilization(s.fabric_utilization);
  out.set_images_per_second(s.images_per_second);
  out.set_queue_depth(static_cast<uint32_t>(s.queue_depth));
  out.set_modeled_energy_joules(s.modeled_energy_joules);
  out.set_ready(s.ready);
  for (const telemetry::ModelStats& m : s.models) {
    v1::ModelTelemetry* mt = out.add_models();
    mt->set_name(m.name);
    mt->set_queue_depth(static_cast<uint32_t>(m.queue_depth));
    mt->set_images_per_second(m.images_per_second);
    mt->set_requests_ok(m.requests_ok);
    mt->set_requests_failed(m.requests_failed);
    for (const auto& [size, batches] : m.batch_sizes) {
      v1::BatchSizeCount* b = mt->add_batch_sizes();
      b->set_size(size);
      b->set_batches(batches);
    }
    for (const telemetry::StageLatency& l : m.latency) latency_to_proto(l, *mt->add_latency());
  }
  for (const telemetry::DeviceStats& d : s.devices) device_to_proto(d, *out.add_devices());
}

TelemetryService::TelemetryService(const telemetry::ServerStats& stats, InFlightTracker& in_flight)
    : stats_(stats), in_flight_(in_flight) {}

grpc::ServerUnaryReactor* TelemetryService::GetTelemetry(grpc::CallbackServerContext* context,
                                                         const v1::GetTelemetryRequest* /*request*/,
                                                         v1::TelemetrySnapshot* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  to_proto(stats_.snapshot(), *response);
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerWriteReactor<v1::TelemetrySnapshot>* TelemetryService::WatchTelemetry(
    grpc::CallbackServerContext* /*context*/, const v1::WatchTelemetryRequest* request) {
  // A reactor that only finishes: the server is draining.
  class Refused final : public grpc::ServerWriteReactor<v1::TelemetrySnapshot> {
   public:
    explicit Refused(const grpc::Status& status) {
      handed_to_grpc(this);
      Finish(status);
    }
    void OnDone() override {
      back_from_grpc(this);
      delete this;
    }
  };
  if (!in_flight_.try_begin()) {
    return new Refused(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down"));
  }
  const uint32_t asked = request->interval_ms() == 0 ? kDefaultIntervalMs : request->interval_ms();
  return new WatchReactor(stats_, in_flight_, watch_drains_, std::clamp(asked, kMinIntervalMs, kMaxIntervalMs),
                          request->max_snapshots());
}

}  // namespace tessera
