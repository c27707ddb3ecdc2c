// tessera.v1.Telemetry on gRPC's callback API: GetTelemetry answers inline from ServerStats;
// WatchTelemetry streams a snapshot every interval, paced by a grpc::Alarm (no thread waits).
#pragma once

#include <atomic>

#include "server/batching/in_flight.h"
#include "server/telemetry/event_stream_hub.h"
#include "server/telemetry/server_stats.h"
#include "tessera/v1/telemetry.grpc.pb.h"

namespace tessera {

// The wire form of a snapshot.
void to_proto(const telemetry::TelemetrySnapshot& s, v1::TelemetrySnapshot& out);

class TelemetryService final : public v1::Telemetry::CallbackService {
 public:
  // `in_flight`: the daemon's one in-flight count (admission's), which the watch streams join; it
  // must outlive the service.
  TelemetryService(const telemetry::ServerStats& stats, InFlightTracker& in_flight);

  grpc::ServerUnaryReactor* GetTelemetry(grpc::CallbackServerContext* context, const v1::GetTelemetryRequest* request,
                                         v1::TelemetrySnapshot* response) override;
  grpc::ServerWriteReactor<v1::TelemetrySnapshot>* WatchTelemetry(grpc::CallbackServerContext* context,
                                                                  const v1::WatchTelemetryRequest* request) override;

  // After the in-flight count started draining: ends the open watch streams now (with OK), not at their
  // next tick, which may be a minute away.
  void end_watch_streams() { watch_drains_.wake_all(); }

 private:
  const telemetry::ServerStats& stats_;
  InFlightTracker& in_flight_;  // open watch streams; draining refuses new ones
  EventStreamHub watch_drains_;
};

}  // namespace tessera
