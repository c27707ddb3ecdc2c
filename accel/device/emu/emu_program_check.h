// The emulator's load-time checks: the header, every descriptor against the synthesised limits
// (abi::layer_fits, the same verdict as the kernel's), and what the kernel takes on trust but
// the emulator must not: that every tensor and parameter array a layer touches lies inside its
// buffer (as the kernel addresses it), and that requantisation shifts are in range.
#pragma once

#include <string>

#include "accel/common/status.h"
#include "accel/program/program.h"

namespace tessera::emu {

// "conv" | "pool" | "add" | "op 7".
std::string layer_op_name(uint32_t op);

// OK, or INVALID_ARGUMENT naming the first bad layer ("layer 3 (conv): ...").
Status check_program(const CompiledProgram& program);

}  // namespace tessera::emu
