// The emulator's program/descriptor validator (accel/device/emu/emu_program_check): a hostile
// program must be refused before it touches memory. The fuzz bytes are read as a program by
// tests/fuzz/emu_program_bytes.h. A program check_program accepts is then loaded and run on the
// emulator (one image, zero input), where ASan sees any byte it touches outside its buffers.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "accel/device/emu/emu_device.h"
#include "accel/device/emu/emu_program_check.h"
#include "tests/fuzz/emu_program_bytes.h"

namespace {

// Arenas beyond this are refused by the fuzz target, not the product: they only cost memory.
constexpr uint64_t kMaxFuzzArenaBytes = 64u << 20;
// Programs with more multiply-accumulates (or window and element steps) than this are checked but
// not run, also by the fuzz target only: a valid layer of 10^11 MACs is legal and merely slow
// (minutes under ASan on one thread), which libFuzzer reported as a timeout. The emulator now
// abandons such a run at its timeout mid-layer; tests/fuzz/corpus/fuzz_emu_program/
// timeout-one-large-layer (rewritten for ABI 3's descriptor) is one, which FuzzRegressions.
// OneLargeLayerIsAbandonedAtTheRunTimeout runs. The cap keeps each input at ~1 s of the
// instrumented emulator.
constexpr double kMaxFuzzWork = 5e7;

// The emulator's work for the program, in MACs (conv), window steps (pool) and elements (add).
double program_work(const tessera::CompiledProgram& program) {
  double work = 0;
  for (const tessera::abi::LayerDesc& d : program.layers) {
    const double out = static_cast<double>(d.out_c) * d.out_h * d.out_w;
    if (d.op == tessera::abi::kOpConv) {
      const double groups = d.groups == 0 ? 1.0 : d.groups;
      work += static_cast<double>(d.out_c) * d.conv_h * d.conv_w * (d.in_c / groups) * d.kernel_h * d.kernel_w;
      work += out * d.pool_h * d.pool_w;
    } else if (d.op == tessera::abi::kOpPool) {
      work += out * d.pool_h * d.pool_w;
    } else {
      work += out;
    }
  }
  return work;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static tessera::EmuDevice device("zcu102", tessera::EmuDeviceOptions{.threads = 1, .portable = false});
  const tessera::CompiledProgram program = tessera::fuzz::program_from_bytes(data, size);
  if (!tessera::emu::check_program(program).is_ok()) return 0;
  if (program.header.arena_image_bytes > kMaxFuzzArenaBytes) return 0;
  if (program_work(program) > kMaxFuzzWork) return 0;
  auto loaded = device.load(program, 1);
  if (!loaded.is_ok()) return 0;
  std::vector<int8_t> input(program.input_bytes()), output(program.output_bytes());
  (void)loaded.value()->run(input, 1, output, std::chrono::milliseconds(5000));
  return 0;
}
