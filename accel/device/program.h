// CompiledProgram: what the compiler (accel/plan + accel/quant) hands a Device — the layer
// descriptors of kernels/kernel_abi.h, the int8 weights and int32 quantisation arrays, and how
// the host feeds the fabric's input and reads its output.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/kernel_abi.h"

namespace tessera {

struct CompiledProgram {
  abi::ProgramHeader header{};           // batch is set per run
  std::vector<abi::LayerDesc> layers;
  std::vector<int8_t> weights;           // the weights buffer
  std::vector<int32_t> quant;            // the quant buffer
  // The fabric part's input and output tensors (C x H x W int8 in each image's arena) and
  // their scales: real = int8 * scale.
  uint32_t input_c = 0, input_h = 0, input_w = 0;
  float input_scale = 1.0f;
  uint32_t output_c = 0, output_h = 0, output_w = 0;
  float output_scale = 1.0f;

  uint32_t input_bytes() const { return input_c * input_h * input_w; }
  uint32_t output_bytes() const { return output_c * output_h * output_w; }
  // Header + descriptors as the 32-bit words the kernel reads, with header.batch = batch.
  std::vector<uint32_t> program_words(uint32_t batch) const;
};

}  // namespace tessera
