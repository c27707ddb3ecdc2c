#include "server/routes/telemetry_routes.h"

#include <algorithm>
#include <charconv>
#include <memory>
#include <string>

#include "server/http/responses.h"
#include "server/http/url.h"
#include "server/telemetry/telemetry_json.h"

namespace tessera {
namespace {

constexpr uint64_t kDefaultIntervalMs = 1000;
constexpr uint64_t kMinIntervalMs = 100;
constexpr uint64_t kMaxIntervalMs = 60'000;

// One open stream: a snapshot per next() until max_events, or until the daemon drains.
class TelemetryEventSource final : public HttpEventSource {
 public:
  TelemetryEventSource(const telemetry::ServerStats& stats, InFlightTracker& in_flight, EventStreamHub& hub,
                       std::chrono::milliseconds interval, uint64_t max_events)
      : stats_(stats), in_flight_(in_flight), hub_(hub), interval_(interval), max_events_(max_events) {}

  ~TelemetryEventSource() override {
    if (wake_id_ != 0) hub_.remove(wake_id_);
    in_flight_.end();
  }

  std::optional<std::string> next() override {
    if (in_flight_.draining() || (max_events_ != 0 && sent_ >= max_events_)) return std::nullopt;
    ++sent_;
    return "data: " +
           telemetry::to_json(stats_.snapshot()).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
           "\n\n";
  }

  std::chrono::milliseconds interval() const override { return interval_; }

  void set_wake(std::function<void()> wake) override { wake_id_ = hub_.add(std::move(wake)); }

 private:
  const telemetry::ServerStats& stats_;
  InFlightTracker& in_flight_;
  EventStreamHub& hub_;
  const std::chrono::milliseconds interval_;
  const uint64_t max_events_;
  uint64_t sent_ = 0;
  uint64_t wake_id_ = 0;
};

// A non-negative integer query parameter; `fallback` when absent, nullopt when malformed.
std::optional<uint64_t> number_param(const std::map<std::string, std::string>& params, const char* name,
                                     uint64_t fallback) {
  const auto it = params.find(name);
  if (it == params.end() || it->second.empty()) return fallback;
  uint64_t value = 0;
  const std::string& text = it->second;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

void respond_telemetry_stream(const HttpRequest& request, const HttpResponder& respond,
                              const telemetry::ServerStats& stats, InFlightTracker& in_flight, EventStreamHub& hub) {
  const auto params = parse_query(split_target(request.target()).query);
  if (!params) return respond(make_error_response(Status::invalid_argument("malformed query string")));
  const auto interval_ms = number_param(*params, "interval_ms", kDefaultIntervalMs);
  if (!interval_ms)
    return respond(make_error_response(Status::invalid_argument("interval_ms must be a non-negative integer")));
  const auto max_events = number_param(*params, "max_events", 0);
  if (!max_events)
    return respond(make_error_response(Status::invalid_argument("max_events must be a non-negative integer")));
  if (!in_flight.try_begin()) return respond(make_error_response(Status::unavailable("the server is shutting down")));

  HttpEventStream stream;
  stream.head = make_text_response(200, "", "text/event-stream");
  stream.head.set(boost::beast::http::field::cache_control, "no-cache");
  stream.head.set("X-Accel-Buffering", "no");  // proxies: pass each event on at once
  stream.source = std::make_unique<TelemetryEventSource>(
      stats, in_flight, hub, std::chrono::milliseconds(std::clamp(*interval_ms, kMinIntervalMs, kMaxIntervalMs)),
      *max_events);
  respond(std::move(stream));
}

}  // namespace tessera
