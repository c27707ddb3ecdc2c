#include "accel/device/emu/emu_backend.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "accel/device/emu/emu_device.h"
#include "accel/device/emu/emu_faults.h"
#include "accel/device/emu/emu_kernels.h"

namespace tessera {

Result<BackendDevice> open_emu_backend(const DeviceTarget& target, const EmuBackendOptions& options) {
  EmuDeviceOptions emu_options;
  auto faults = emu::parse_emu_faults(options.faults);
  if (!faults.is_ok()) return faults.status();
  if (auto kernels = emu::select_kernels(); !kernels.is_ok()) return kernels.status();  // TESSERA_EMU_KERNELS
  if (faults->applies_to(target.index)) emu_options.faults = *faults;
  emu_options.threads = options.threads;
  // Instances of one list split the hardware threads between them (at least one each).
  if (target.list_size > 1 && emu_options.threads == 0) {
    emu_options.threads = std::max(1U, std::max(1U, std::thread::hardware_concurrency()) / target.list_size);
  }
  auto device = std::make_unique<EmuDevice>(target.board, emu_options);
  std::string note = "device emu: " + device->info().name;
  if (emu_options.faults.any()) note += "; injected faults: " + options.faults;
  return BackendDevice{std::move(device), std::move(note)};
}

}  // namespace tessera
