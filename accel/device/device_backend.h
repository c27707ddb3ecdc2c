// What the registry (device_registry.h) and a backend's factory share: which device of the
// --devices list to open, for which board, and what a factory gives back. Each backend declares
// its own options and factory in its folder (emu/emu_backend.h, xrt/xrt_backend.h).
#pragma once

#include <memory>
#include <string>

#include "accel/device/device.h"

namespace tessera {

// One entry of the --devices list.
struct DeviceTarget {
  unsigned index = 0;            // xrt: xrt::device index; emu: the instance's number
  unsigned list_size = 1;        // how many entries the list has (they share this host's threads)
  std::string board = "zcu102";  // board profile (emu's timing model; reported by both)
};

// A device a factory opened, and the log line saying which and why.
struct BackendDevice {
  std::unique_ptr<Device> device;
  std::string note;  // e.g. "device emu: emulator (4 threads, AVX2)"
};

}  // namespace tessera
