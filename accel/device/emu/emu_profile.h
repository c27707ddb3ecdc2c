// TESSERA_EMU_PROFILE: where an emulated run's time goes, per layer. Set (to anything), every
// program the emulator loads times each layer of each run and, when unloaded, prints one line
// per layer to stderr (op, shape, path, ms per image, GMAC/s, share of the run) and the totals.
// Off (unset), a run reads no clock beyond the deadline checks.
#pragma once

#include <vector>

#include "accel/device/emu/emu_device.h"
#include "kernels/kernel_abi.h"

namespace tessera::emu {

bool profile_enabled();
void print_profile(const std::vector<abi::LayerDesc>& layers, const EmuKernels& kernels,
                   const std::vector<LayerTime>& times);

}  // namespace tessera::emu
