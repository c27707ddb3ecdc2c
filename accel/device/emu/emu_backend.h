// The emu backend's face to the registry (device_registry.h): its options and its factory. Built
// into the registry's library, not the emulator's (the `*_backend*` files of a backend folder).
#pragma once

#include <string>

#include "accel/common/status.h"
#include "accel/device/device_backend.h"

namespace tessera {

struct EmuBackendOptions {
  unsigned threads = 0;  // threads of one instance; 0: one per hardware thread, split over the list
  std::string faults;    // injected faults, "fail-run=3,reset-ms=500" (emu_faults.h); "" = none
};

// One emulator for target.board, instance target.index (emu_faults' instance=).
Result<BackendDevice> open_emu_backend(const DeviceTarget& target, const EmuBackendOptions& options);

}  // namespace tessera
