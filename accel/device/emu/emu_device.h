// EmuDevice: the bit-exact software accelerator, Tessera's default device without a board. It
// executes the descriptors of kernels/kernel_abi.h with the kernel's integer arithmetic, as an
// independent, CPU-shaped implementation (an implicit int8 GEMM on the AVX-512 VNNI path, im2col + GEMM on
// the others, AVX2 or NEON where the CPU has it, a thread pool over images, rows and channels). The twin it is held
// bit-exact against is the HLS kernel's C simulation (tests/bitexact). Fabric time is the planner's model carried by
// the program (CompiledProgram::model, from the board profile the program was planned for).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "accel/device/device.h"
#include "accel/device/emu/emu_faults.h"

namespace tessera {

namespace emu {
class EmuThreadPool;
struct EmuKernels;
struct LayerTime {
  uint64_t runs = 0, images = 0;
  double seconds = 0;
};
}  // namespace emu

// A program loaded on the emulator: a copy of the weights and quant buffers (plus the weights
// repacked for the GEMM), and an arena for max_batch images.
class EmuProgram : public DeviceProgram {
 public:
  // `program` must have passed emu::check_program.
  EmuProgram(const CompiledProgram& program, uint32_t max_batch, std::shared_ptr<emu::EmuThreadPool> pool,
             const emu::EmuKernels& kernels, std::shared_ptr<emu::EmuFaultState> faults = nullptr);
  ~EmuProgram() override;

  // Copies each image's input to header.input_offset of its arena slot, executes, copies
  // output_offset out. A non-positive timeout means no limit (as xrt::run::wait(0)).
  Status run(std::span<const int8_t> inputs, uint32_t batch, std::span<int8_t> outputs,
             std::chrono::milliseconds timeout) override;
  uint64_t last_run_cycles() const override { return last_run_cycles_; }

  // Executes the layers on a caller's arena of batch x header.arena_image_bytes, exactly as the
  // kernel does with its arena buffer (what the bit-exactness test compares). batch <= max_batch.
  Status execute(std::span<int8_t> arena, uint32_t batch,
                 std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());

  uint32_t max_batch() const { return max_batch_; }

 private:
  // The fault the device's plan injects into this run, if any (emu_faults.h); OK when none.
  Status injected_fault(std::span<int8_t> outputs, uint32_t batch, std::chrono::milliseconds timeout);

  abi::ProgramHeader header_;
  std::vector<abi::LayerDesc> layers_;
  std::vector<int8_t> weights_;
  std::vector<int32_t> quant_;
  std::vector<std::vector<int32_t>> packed_;  // per layer: GEMM-packed weights (may be empty)
  std::vector<int8_t> arena_;
  std::vector<int8_t> scratch_;  // pre-pool conv outputs, max_batch images
  uint32_t input_bytes_, output_bytes_;
  uint32_t max_batch_;
  std::shared_ptr<emu::EmuThreadPool> pool_;
  const emu::EmuKernels& kernels_;
  ProgramModel model_;
  uint64_t last_run_cycles_ = 0;
  std::shared_ptr<emu::EmuFaultState> faults_;  // null: no fault injection
  // TESSERA_EMU_PROFILE set: per batch size and layer, runs, images and seconds, printed to
  // stderr when the program is unloaded (emu_profile.h); empty otherwise.
  std::vector<std::vector<emu::LayerTime>> profile_;
};

// How an EmuDevice computes (never what: every choice gives the same bytes).
struct EmuDeviceOptions {
  unsigned threads = 0;        // 0: one per hardware thread
  bool portable = false;       // use the portable loops even where AVX2/NEON is available (tests)
  emu::EmuFaultPlan faults{};  // injected faults (tests of the daemon's recovery); none by default
  // A given version of the inner loops (emu::available_kernels(); the tests run each one); null:
  // `portable` decides between the scalar loops and emu::emu_kernels() (TESSERA_EMU_KERNELS).
  const emu::EmuKernels* kernels = nullptr;
};

class EmuDevice : public Device {
 public:
  // `board` names the profile programs are planned for on this device (DeviceInfo::board).
  explicit EmuDevice(std::string board = "zcu102", EmuDeviceOptions options = {});
  ~EmuDevice() override;

  DeviceInfo info() const override;
  Result<std::unique_ptr<DeviceProgram>> load(const CompiledProgram& program, uint32_t max_batch) override;
  // load() with the concrete type (tests call EmuProgram::execute).
  Result<std::unique_ptr<EmuProgram>> load_program(const CompiledProgram& program, uint32_t max_batch);
  // Nothing to reset in software; takes the fault plan's reset-ms.
  Status reset() override;

 private:
  std::string board_;
  std::shared_ptr<emu::EmuThreadPool> pool_;
  const emu::EmuKernels& kernels_;
  // Why TESSERA_EMU_KERNELS' choice cannot run (load_program returns it); ok when it can.
  Status kernels_status_;
  std::shared_ptr<emu::EmuFaultState> faults_;  // null: no fault injection
};

}  // namespace tessera
