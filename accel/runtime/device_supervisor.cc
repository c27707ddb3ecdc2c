#include "accel/runtime/device_supervisor.h"

#include <utility>

namespace tessera {

const char* device_state_name(DeviceState state) {
  switch (state) {
    case DeviceState::kServing: return "serving";
    case DeviceState::kRecovering: return "recovering";
    case DeviceState::kOutOfService: return "out of service";
  }
  return "unknown";
}

DeviceSupervisor::DeviceSupervisor(std::shared_ptr<Device> device, int max_failures, unsigned index)
    : device_(std::move(device)), max_failures_(max_failures < 1 ? 1 : max_failures), index_(index) {}

DeviceHealth DeviceSupervisor::health() const {
  std::lock_guard lock(mu_);
  return health_;
}

Status DeviceSupervisor::usable() const {
  std::lock_guard lock(mu_);
  if (health_.state != DeviceState::kOutOfService) return Status::ok();
  return Status::unavailable("device out of service: " + health_.reason);
}

uint64_t DeviceSupervisor::generation() const {
  std::lock_guard lock(mu_);
  return generation_;
}

void DeviceSupervisor::set_listener(std::function<void(const DeviceEvent&)> listener) {
  std::lock_guard lock(listener_mu_);
  listener_ = std::move(listener);
}

// Sends the event with mu_ released (the listener may read health()), in the order of changes.
void DeviceSupervisor::notify(DeviceEvent::Kind kind, std::string message, std::unique_lock<std::mutex>& lock) {
  DeviceEvent event{kind, std::move(message), health_};
  std::lock_guard listening(listener_mu_);
  lock.unlock();
  if (listener_) listener_(event);
}

Status DeviceSupervisor::failed(const Status& error) {
  std::unique_lock lock(mu_);
  ++health_.errors;
  ++failures_in_row_;
  const std::string what = std::string(status_code_name(error.code())) + ": " + error.message();
  if (health_.state == DeviceState::kOutOfService)
    return Status::unavailable("device out of service: " + health_.reason);
  if (failures_in_row_ >= max_failures_) {
    health_.state = DeviceState::kOutOfService;
    health_.reason = "the device failed " + std::to_string(failures_in_row_) +
                     " times in a row, resets did not help (last: " + what + ")";
    notify(DeviceEvent::Kind::kOutOfService, what, lock);
    return Status::unavailable("device failed: " + what + "; it is now out of service");
  }
  health_.state = DeviceState::kRecovering;
  health_.reason = "resetting the device after: " + what;
  notify(DeviceEvent::Kind::kFailed, what, lock);
  return Status::unavailable("device failed: " + what + "; the device is being reset, retry");
}

Status DeviceSupervisor::wedged(std::chrono::milliseconds waited) {
  std::unique_lock lock(mu_);
  if (health_.state == DeviceState::kOutOfService)
    return Status::unavailable("device out of service: " + health_.reason);
  ++health_.errors;
  const std::string what = "a device run did not return within " + std::to_string(waited.count()) +
                           " ms although its timeout is shorter (the device is wedged)";
  health_.state = DeviceState::kOutOfService;
  health_.reason = what + "; restart the daemon (on a board: xbutil reset first)";
  notify(DeviceEvent::Kind::kOutOfService, what, lock);
  return Status::unavailable("device failed: " + what + "; it is now out of service");
}

Status DeviceSupervisor::reset(uint64_t seen) {
  std::lock_guard resetting(reset_mu_);
  {
    std::lock_guard lock(mu_);
    if (generation_ != seen) return Status::ok();  // someone reset it since
  }
  Status status = device_->reset();
  std::lock_guard lock(mu_);
  ++generation_;  // even a failed reset leaves the old programs unusable
  if (status.is_ok()) ++health_.resets;
  return status;
}

void DeviceSupervisor::recovered() {
  std::unique_lock lock(mu_);
  if (health_.state != DeviceState::kRecovering) return;
  health_.state = DeviceState::kServing;
  health_.reason.clear();
  notify(DeviceEvent::Kind::kRecovered, "device reset and program reloaded", lock);
}

void DeviceSupervisor::run_ok() {
  std::lock_guard lock(mu_);
  failures_in_row_ = 0;
}

}  // namespace tessera
