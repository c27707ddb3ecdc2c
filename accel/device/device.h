// Device: where a compiled program's fabric part runs. Backends: `emu` (bit-exact software
// accelerator, the default without a board) and `xrt` (a real board through XRT). They register
// in one explicit registry (device_registry.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "accel/common/status.h"
#include "accel/program/program.h"

namespace tessera {

struct DeviceInfo {
  std::string kind;      // "emu" | "xrt"
  std::string name;      // e.g. "emulator (2 threads, AVX2)" or the card's name
  std::string board;     // board profile the timing model uses, e.g. "zcu102"
  std::string detail;    // xclbin path, XRT version, ... for logs and ServerMetadata
  double clock_mhz = 0;  // fabric clock that last_run_cycles() counts in (0: unknown)
};

// One reading of a device's own power and temperature sensors (Device::sample_sensors()). Each
// field is absent when the device does not report it.
struct DeviceSensors {
  std::optional<double> power_watts;             // board input power
  std::optional<double> temperature_c;           // the hottest of `temperatures_c`
  std::map<std::string, double> rails_watts;     // per power rail, e.g. "12v_pex" -> 18.2
  std::map<std::string, double> temperatures_c;  // per sensor, e.g. "fpga0" -> 61
  std::vector<std::string> notes;                // sensors that could not be read, and why
};

// A program resident on a device (weights uploaded once), runnable on batches up to max_batch.
// run() is not re-entrant on one DeviceProgram; a pipeline that wants two batches in flight
// loads the program twice or uses two buffer sets (the XRT backend ping-pongs internally).
class DeviceProgram {
 public:
  virtual ~DeviceProgram() = default;

  // inputs: batch x program.input_bytes() int8 (C x H x W per image), outputs: batch x
  // program.output_bytes(). DEADLINE_EXCEEDED when the device does not finish in `timeout`
  // (the run is aborted), INTERNAL naming the layer when the kernel refuses a descriptor.
  virtual Status run(std::span<const int8_t> inputs, uint32_t batch, std::span<int8_t> outputs,
                     std::chrono::milliseconds timeout) = 0;

  // Fabric cycles the last run() takes on the device's board profile (modelled on `emu`,
  // measured where the hardware reports it).
  virtual uint64_t last_run_cycles() const = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual DeviceInfo info() const = 0;
  // Validates every descriptor (abi::layer_fits) and makes the weights resident.
  virtual Result<std::unique_ptr<DeviceProgram>> load(const CompiledProgram& program, uint32_t max_batch) = 0;

  // Brings the device back to a known state after a run failed (timed out and was aborted, ended
  // in an error, left a corrupt status). Every program loaded before is invalid afterwards:
  // destroy them first and load them again. Not thread-safe against run() or load() (the caller,
  // runtime/device_supervisor.h, serialises). The default has nothing to reset.
  virtual Status reset() { return Status::ok(); }

  // The device's power and temperature sensors now. UNIMPLEMENTED "unsupported: ..." when the
  // device has none (the default; the emulator's power comes from the board's power model),
  // UNAVAILABLE when reading them failed this time. Thread-safe; never throws.
  virtual Result<DeviceSensors> sample_sensors() const {
    return Status::unimplemented("unsupported: " + info().kind + " device reports no power or temperature sensors");
  }
};

}  // namespace tessera
