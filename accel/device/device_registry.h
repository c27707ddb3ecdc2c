// The one explicit registry of device backends: a table of {name, factory, description} that the
// daemon's --device flag and the CLI's device listing read. `auto` picks `xrt` when a Xilinx
// device and an xclbin are there, else `emu`, and says which and why.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "accel/common/status.h"
#include "accel/device/device.h"

namespace tessera {

struct DeviceOptions {
  std::string kind = "auto";     // a DeviceBackend name: "auto", "emu" or "xrt"
  std::filesystem::path xclbin;  // xrt: the xclbin; empty = $TESSERA_XCLBIN, then the defaults
  unsigned index = 0;            // xrt: xrt::device index; emu: the instance's number (emu_faults' instance=)
  std::string devices = "0";     // open_devices(): "all" or a list of indices, "0,1"
  unsigned emu_threads = 0;      // emu: threads of one instance (0: one per hardware thread)
  std::string board = "zcu102";  // board profile (emu's timing model; reported by both)
  // xrt: open only this compute unit of the xclbin's kernel ("tessera_accel_2"); "" = all of them.
  // open_devices() sets it: a card whose xclbin has several instances of the kernel (aws-f1: three,
  // each on its own DDR bank) becomes one device per instance, so an instance group runs batches
  // on all of them side by side.
  std::string xrt_compute_unit;
  std::string emu_faults;  // emu: injected faults, "fail-run=3,reset-ms=500" (emu/emu_faults.h); "" = none
};

// Where the xclbin is looked for when DeviceOptions::xclbin is empty, after $TESSERA_XCLBIN.
inline constexpr const char* kDefaultXclbinPaths[] = {"/opt/tessera/tessera_accel.xclbin",
                                                      "/opt/tessera/tessera_accel.awsxclbin"};

// A backend: `factory` opens it; on success it may set *log_note (never null inside a factory).
struct DeviceBackend {
  const char* name;
  Result<std::unique_ptr<Device>> (*factory)(const DeviceOptions& options, std::string* log_note);
  const char* description;
};

// The table, in the order the CLI lists it: auto, emu, xrt.
std::span<const DeviceBackend> device_backends();

// "auto, emu, xrt"
std::string device_kinds();

// The xclbin an xrt device would load: options.xclbin, else $TESSERA_XCLBIN, else the first of
// kDefaultXclbinPaths that exists; empty when none is given or found.
std::filesystem::path resolve_xclbin(const DeviceOptions& options);

// Opens the backend named options.kind. INVALID_ARGUMENT listing the kinds for an unknown one;
// errors of a backend are prefixed "--device KIND: ". *log_note (if given) says which device
// was chosen and why, e.g. "device auto: no Xilinx device found, using the emulator".
Result<std::unique_ptr<Device>> open_device(const DeviceOptions& options, std::string* log_note = nullptr);

// A device list: "all" -> nullopt; "0,2" -> {0, 2}. INVALID_ARGUMENT for an empty list, a repeated
// index or anything not a number.
Result<std::optional<std::vector<unsigned>>> parse_device_list(std::string_view text);

// One device per index of options.devices, in list order, each opened as open_device() would
// with that index. "all" is every Xilinx device XRT sees (xrt; auto when there is one) or one
// emulator instance. Emulator instances split the hardware threads between them (at least one
// each). *log_note says what was opened, a line per device.
struct OpenedDevice {
  unsigned index = 0;  // its number in the list (xrt::device index on a board)
  std::unique_ptr<Device> device;
};
Result<std::vector<OpenedDevice>> open_devices(const DeviceOptions& options, std::string* log_note = nullptr);

}  // namespace tessera
