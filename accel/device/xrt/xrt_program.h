// XrtProgram: a CompiledProgram resident on an XRT device.
//
// Buffers (each bound to the memory bank of its kernel argument, kernel.group_id(arg)):
//   weights, quant  uploaded and synced once at load: resident for the program's lifetime;
//   program, arena, status  two sets, A and B. Consecutive run()s alternate sets (ping-pong).
//
// run() itself is synchronous: write the inputs of set X, start, wait, read the verdict and the
// outputs of set X. What the two sets buy today is that a run that timed out and was aborted
// leaves its buffers alone for one more run. An asynchronous variant (start(batch) returning a
// waitable) would overlap, per set: filling set B's inputs (bo.write + sync to device) and reading
// set A's outputs (sync from device + bo.read) with the kernel running on the other set, which is
// the fabric/host overlap of NEURAghe (seeds/003) at the buffer level.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>

#include "accel/common/status.h"
#include "accel/device/device.h"
#include "accel/program/program.h"

namespace tessera {

struct XrtHandles;

// The checks load() makes before touching the device: max_batch >= 1, a non-empty program of at
// most abi::kMaxLayers layers, every descriptor within abi::layer_fits (INVALID_ARGUMENT naming
// the layer), input/output tensors inside the per-image arena.
Status check_program_for_device(const CompiledProgram& program, uint32_t max_batch);

class XrtProgram : public DeviceProgram {
 public:
  // Allocates and uploads; a failure of XRT is INTERNAL/RESOURCE_EXHAUSTED with its message.
  static Result<std::unique_ptr<DeviceProgram>> create(const XrtHandles& handles, const CompiledProgram& program,
                                                       uint32_t max_batch);
  ~XrtProgram() override;

  // A non-positive timeout means no limit (xrt::run::wait(0), as on the emulator). XRT documents
  // that on some shells wait(timeout) may only return once the command completes, i.e. the
  // timeout is a best effort there. After an abort the device did not confirm, every later run is UNAVAILABLE.
  Status run(std::span<const int8_t> inputs, uint32_t batch, std::span<int8_t> outputs,
             std::chrono::milliseconds timeout) override;

  // Measured wall time of the last kernel run (start() to wait() returning) x the xclbin's data
  // clock: an upper bound, as it includes the launch and completion latency of XRT's scheduler
  // (tens of microseconds). 0 when the xclbin does not name its clock or no run has completed.
  uint64_t last_run_cycles() const override;

 private:
  struct State;
  explicit XrtProgram(std::unique_ptr<State> state);

  std::unique_ptr<State> state_;
};

}  // namespace tessera
