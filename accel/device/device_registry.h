// The one explicit registry of device backends: a table of {name, factory, description} that the
// daemon's --device flag and the CLI's device listing read. `auto` picks `xrt` when a Xilinx
// device and an xclbin are there, else `emu`, and says which and why.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "accel/common/status.h"
#include "accel/device/device.h"
#include "accel/device/device_backend.h"
#include "accel/device/emu/emu_backend.h"
#include "accel/device/xrt/xrt_backend.h"

namespace tessera {

// What --device, --devices, --board and each backend's own flags ask for.
struct DeviceOptions {
  std::string kind = "auto";     // a DeviceBackend name: "auto", "emu" or "xrt"
  unsigned index = 0;            // open_device(): which device (open_devices() takes `devices`)
  std::string devices = "0";     // open_devices(): "all" or a list of indices, "0,1"
  std::string board = "zcu102";  // board profile (emu's timing model; reported by both)
  EmuBackendOptions emu;         // the emu backend's own (emu/emu_backend.h)
  XrtBackendOptions xrt;         // the xrt backend's own (xrt/xrt_backend.h)
};

// A backend: `factory` opens the devices of one entry of the list (one, or one per compute unit
// of a card), `all` says which entries "--devices all" stands for.
struct DeviceBackend {
  const char* name;
  Result<std::vector<BackendDevice>> (*factory)(const DeviceOptions& options, const DeviceTarget& target);
  Result<std::vector<unsigned>> (*all)(const DeviceOptions& options);
  const char* description;
};

// The table, in the order the CLI lists it: auto, emu, xrt.
std::span<const DeviceBackend> device_backends();

// "auto, emu, xrt"
std::string device_kinds();

// Opens the backend named options.kind for device options.index: the first device its factory
// gives (a card with several compute units: the first unit). INVALID_ARGUMENT listing the kinds for an unknown one;
// errors of a backend are prefixed "--device KIND: ". *log_note (if given) says which device
// was chosen and why, e.g. "device auto: no Xilinx device found, using the emulator".
Result<std::unique_ptr<Device>> open_device(const DeviceOptions& options, std::string* log_note = nullptr);

// A device list: "all" -> nullopt; "0,2" -> {0, 2}. INVALID_ARGUMENT for an empty list, a repeated
// index or anything not a number.
Result<std::optional<std::vector<unsigned>>> parse_device_list(std::string_view text);

// The devices of every index of options.devices, in list order, numbered in that order: an index
// gives one device, or one per compute unit where the backend splits a card. "all" is what the
// backend's `all` says: every Xilinx device XRT sees (xrt; auto when there is one and an xclbin)
// or one emulator instance. *log_note says what was opened, a line per device.
struct OpenedDevice {
  unsigned index = 0;  // its number in the list (xrt::device index on a board)
  std::unique_ptr<Device> device;
};
Result<std::vector<OpenedDevice>> open_devices(const DeviceOptions& options, std::string* log_note = nullptr);

}  // namespace tessera
