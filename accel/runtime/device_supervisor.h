// DeviceSupervisor: the health of the one device the engines share, and the way back after it
// fails. An engine whose run failed (timed out and was aborted, ended in an error, left a corrupt
// status) reports it here, answers that batch UNAVAILABLE "device failed: ...", then resets the
// device (once, however many engines saw the failure) and loads its program again; the others
// reload theirs before their next run (generation()). While that goes on the device is
// RECOVERING; after `max_failures` failures in a row (runs or loads, no success between) it is
// OUT_OF_SERVICE for good and every run is refused at once with the reason.
//
// The daemon listens (set_listener) to log each change, count tessera_device_errors_total and
// turn readiness (gRPC health, /v2/health/ready, tessera_ready) off and on.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "accel/common/status.h"
#include "accel/device/device.h"

namespace tessera {

enum class DeviceState { kServing, kRecovering, kOutOfService };
// "serving", "recovering", "out of service"
const char* device_state_name(DeviceState state);

struct DeviceHealth {
  DeviceState state = DeviceState::kServing;
  std::string reason;   // why it is not serving ("" while serving)
  uint64_t errors = 0;  // failed runs and loads since start
  uint64_t resets = 0;  // device resets since start
};

// One change of the device's health, as the listener hears it.
struct DeviceEvent {
  enum class Kind { kFailed, kRecovered, kOutOfService } kind;
  std::string message;  // the failure, or how the recovery went
  DeviceHealth health;  // after the change
};

class DeviceSupervisor {
 public:
  // `index`: the device's number among the daemon's (--devices), for telemetry and logs.
  explicit DeviceSupervisor(std::shared_ptr<Device> device, int max_failures = 3, unsigned index = 0);

  Device& device() const { return *device_; }
  unsigned index() const { return index_; }
  const std::shared_ptr<Device>& shared_device() const { return device_; }
  DeviceHealth health() const;
  // OK while serving or recovering; UNAVAILABLE "device out of service: ..." once out of service.
  Status usable() const;
  // Advances at each reset: a program loaded in an older generation must be loaded again.
  uint64_t generation() const;

  // Called for each change, on the thread that made it, one at a time. Replaces the previous
  // listener; an empty one stops the calls (when this returns, no call is running).
  void set_listener(std::function<void(const DeviceEvent&)> listener);

  // A run or load on the device failed with `error`. Counts it, makes the device RECOVERING (or
  // OUT_OF_SERVICE after max_failures in a row) and returns what the batch is answered:
  // UNAVAILABLE "device failed: <error>; ...".
  Status failed(const Status& error);
  // A run did not come back at all within `waited` (its timeout was not honoured: the device or
  // its driver is wedged, and the thread running it with it). OUT_OF_SERVICE at once; returns
  // what the caller is answered.
  Status wedged(std::chrono::milliseconds waited);
  // Resets the device unless that already happened after generation `seen` (another engine did).
  // The caller then loads its program and reports recovered() or failed().
  Status reset(uint64_t seen);
  // The caller's program is loaded again: SERVING. The failures in a row still count until a run
  // succeeds (a device whose every run fails goes out of service however well it reloads).
  void recovered();
  // A run succeeded: the count of failures in a row starts again (cheap; no event).
  void run_ok();

 private:
  void notify(DeviceEvent::Kind kind, std::string message, std::unique_lock<std::mutex>& lock);

  const std::shared_ptr<Device> device_;
  const int max_failures_;
  const unsigned index_;
  mutable std::mutex mu_;
  DeviceHealth health_;
  int failures_in_row_ = 0;
  uint64_t generation_ = 0;
  std::mutex reset_mu_;     // one reset at a time
  std::mutex listener_mu_;  // held while the listener runs
  std::function<void(const DeviceEvent&)> listener_;
};

}  // namespace tessera
