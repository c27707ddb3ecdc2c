// CompiledProgram: what the compiler (accel/plan + accel/quant) hands a Device — the layer
// descriptors of kernels/kernel_abi.h, the int8 weights and int32 quantisation arrays, and how
// the host feeds the fabric's input and reads its output.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kernel_abi.h"

namespace tessera {

// The planner's model of one layer on the board it planned for (accel/plan/model_plan.h), per
// image: what the emulator reports as "modeled fabric" figures next to measured time.
struct ModeledLayer {
  uint64_t cycles = 0;     // fabric cycles, double-buffered transfers included
  uint64_t ddr_bytes = 0;  // DDR traffic
  double energy_uj = 0;    // dynamic (MACs, DDR) plus static energy over the layer's time
};

struct ProgramModel {
  std::string board;                 // profile name, e.g. "zcu102"; empty: no model (hand-built programs)
  double clock_mhz = 0;              // the profile's fabric clock: cycles / clock_mhz = microseconds
  std::vector<ModeledLayer> layers;  // one per descriptor

  // One launch of `batch` images: the kernel runs every layer for each image in turn.
  uint64_t cycles(uint32_t batch) const;
  double energy_uj(uint32_t batch) const;
};

struct CompiledProgram {
  abi::ProgramHeader header{};  // batch is set per run
  std::vector<abi::LayerDesc> layers;
  std::vector<int8_t> weights;  // the weights buffer
  std::vector<int32_t> quant;   // the quant buffer
  // The fabric part's input and output tensors (C x H x W int8 in each image's arena) and
  // their scales: real = int8 * scale.
  uint32_t input_c = 0, input_h = 0, input_w = 0;
  float input_scale = 1.0f;
  uint32_t output_c = 0, output_h = 0, output_w = 0;
  float output_scale = 1.0f;
  ProgramModel model;  // the plan's timing and energy per layer

  uint32_t input_bytes() const { return input_c * input_h * input_w; }
  uint32_t output_bytes() const { return output_c * output_h * output_w; }
  // Header + descriptors as the 32-bit words the kernel reads, with header.batch = batch.
  std::vector<uint32_t> program_words(uint32_t batch) const;
};

}  // namespace tessera
