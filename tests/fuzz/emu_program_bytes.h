// How fuzz_emu_program reads its bytes as a program, shared with the regression tests that replay
// its committed inputs (tests/unit/regressions). The layout:
//   ProgramHeader (64 bytes; magic, version and layer_count are set here)
//   6 x uint16: input c, h, w and output c, h, w of the fabric part
//   uint32 weights bytes (mod 1 MiB), uint32 quant words (mod 64 Ki)
//   up to kMaxFuzzLayers LayerDesc, whole ones only
// The weights and quant buffers are filled with a repeating pattern (quant word i is 8 where
// i % 3 == 2, a valid shift, and i * 977 elsewhere).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "accel/program/program.h"

namespace tessera::fuzz {

constexpr size_t kMaxFuzzLayers = 8;

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

inline CompiledProgram program_from_bytes(const uint8_t* data, size_t size) {
  const uint8_t* p = data;
  const uint8_t* end = data + size;
  CompiledProgram program;
  program.header = take<abi::ProgramHeader>(p, end);
  program.input_c = take<uint16_t>(p, end);
  program.input_h = take<uint16_t>(p, end);
  program.input_w = take<uint16_t>(p, end);
  program.output_c = take<uint16_t>(p, end);
  program.output_h = take<uint16_t>(p, end);
  program.output_w = take<uint16_t>(p, end);
  const uint32_t weight_bytes = take<uint32_t>(p, end) % (1u << 20);
  const uint32_t quant_words = take<uint32_t>(p, end) % (1u << 16);
  while (program.layers.size() < kMaxFuzzLayers && static_cast<size_t>(end - p) >= sizeof(abi::LayerDesc)) {
    program.layers.push_back(take<abi::LayerDesc>(p, end));
  }
  program.header.magic = abi::kProgramMagic;
  program.header.version = abi::kAbiVersion;
  program.header.layer_count = static_cast<uint32_t>(program.layers.size());
  program.weights.resize(weight_bytes);
  for (size_t i = 0; i < program.weights.size(); ++i) program.weights[i] = static_cast<int8_t>(i * 37 + 11);
  program.quant.resize(quant_words);
  for (size_t i = 0; i < program.quant.size(); ++i) program.quant[i] = static_cast<int32_t>(i % 3 == 2 ? 8 : i * 977);
  return program;
}

}  // namespace tessera::fuzz
