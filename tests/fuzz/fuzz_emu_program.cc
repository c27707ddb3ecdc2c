// The emulator's program/descriptor validator (accel/device/emu/emu_program_check): a hostile
// program must be refused before it touches memory. The fuzz bytes are laid out as
//   ProgramHeader (64 bytes; magic, version and layer_count are set here)
//   6 x uint16: input c, h, w and output c, h, w of the fabric part
//   uint32 weights bytes (mod 1 MiB), uint32 quant words (mod 64 Ki)
//   up to kMaxFuzzLayers LayerDesc, whole ones only
// and the weights and quant buffers are filled with a repeating byte pattern. A program
// check_program accepts is then loaded and run on the emulator (one image, zero input), where
// ASan sees any byte it touches outside its buffers.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "accel/device/emu/emu_device.h"
#include "accel/device/emu/emu_program_check.h"

namespace {

constexpr size_t kMaxFuzzLayers = 8;
// Arenas beyond this are refused by the fuzz target, not the product: they only cost memory.
constexpr uint64_t kMaxFuzzArenaBytes = 64u << 20;
// Programs with more multiply-accumulates (or window and element steps) than this are checked but
// not run, also by the fuzz target only: a valid layer of 10^11 MACs is legal and merely slow
// (minutes under ASan on one thread), which libFuzzer reported as a timeout (the input
// tests/fuzz/corpus/fuzz_emu_program/timeout-one-large-layer, written before ABI 3's descriptor).
// The emulator now abandons such a run at its timeout mid-layer (FuzzRegressions.
// OneLargeLayerIsAbandonedAtTheRunTimeout); the cap keeps each input at ~1 s of the instrumented
// emulator.
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

template <class T>
T take(const uint8_t*& p, const uint8_t* end) {
  T value{};
  if (static_cast<size_t>(end - p) >= sizeof(T)) {
    std::memcpy(&value, p, sizeof(T));
    p += sizeof(T);
  } else {
    p = end;
  }
  return value;
}

tessera::CompiledProgram program_from_bytes(const uint8_t* data, size_t size) {
  const uint8_t* p = data;
  const uint8_t* end = data + size;
  tessera::CompiledProgram program;
  program.header = take<tessera::abi::ProgramHeader>(p, end);
  program.input_c = take<uint16_t>(p, end);
  program.input_h = take<uint16_t>(p, end);
  program.input_w = take<uint16_t>(p, end);
  program.output_c = take<uint16_t>(p, end);
  program.output_h = take<uint16_t>(p, end);
  program.output_w = take<uint16_t>(p, end);
  const uint32_t weight_bytes = take<uint32_t>(p, end) % (1u << 20);
  const uint32_t quant_words = take<uint32_t>(p, end) % (1u << 16);
  while (program.layers.size() < kMaxFuzzLayers && static_cast<size_t>(end - p) >= sizeof(tessera::abi::LayerDesc)) {
    program.layers.push_back(take<tessera::abi::LayerDesc>(p, end));
  }
  program.header.magic = tessera::abi::kProgramMagic;
  program.header.version = tessera::abi::kAbiVersion;
  program.header.layer_count = static_cast<uint32_t>(program.layers.size());
  program.weights.resize(weight_bytes);
  for (size_t i = 0; i < program.weights.size(); ++i) program.weights[i] = static_cast<int8_t>(i * 37 + 11);
  program.quant.resize(quant_words);
  for (size_t i = 0; i < program.quant.size(); ++i) program.quant[i] = static_cast<int32_t>(i % 3 == 2 ? 8 : i * 977);
  return program;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static tessera::EmuDevice device("zcu102", tessera::EmuDeviceOptions{.threads = 1, .portable = false});
  const tessera::CompiledProgram program = program_from_bytes(data, size);
  if (!tessera::emu::check_program(program).is_ok()) return 0;
  if (program.header.arena_image_bytes > kMaxFuzzArenaBytes) return 0;
  if (program_work(program) > kMaxFuzzWork) return 0;
  auto loaded = device.load(program, 1);
  if (!loaded.is_ok()) return 0;
  std::vector<int8_t> input(program.input_bytes()), output(program.output_bytes());
  (void)loaded.value()->run(input, 1, output, std::chrono::milliseconds(5000));
  return 0;
}
