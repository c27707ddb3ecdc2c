// tessera_accel.h — the top-level function of the HLS accelerator, as host code and the C-simulation
// tests see it. The Vitis flow compiles tessera_accel.cpp with this signature as the kernel
// (v++ -c -k tessera_accel); g++ compiles the same file into tessera_kernel_csim.
#pragma once

#include <cstdint>

// Runs header.batch images through the program's layers (kernels/kernel_abi.h): program, weights
// and quant are read-only device buffers, arena holds every image's activations, status receives
// {RunStatus, offending layer index}. One call per batch, not per layer.
extern "C" void tessera_accel(const uint32_t* program, const int8_t* weights, const int32_t* quant, int8_t* arena,
                              uint32_t* status);
