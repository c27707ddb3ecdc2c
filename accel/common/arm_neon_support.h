// What the NEON (Advanced SIMD) loops of the emulator (accel/device/emu/emu_kernels_neon.cc) and
// of the host's float GEMM (accel/host/sgemm_neon.cc) share, for the boards' ARM cores: aarch64
// (ZynqMP's Cortex-A53, where Advanced SIMD is part of the architecture) and 32-bit ARM
// (Zynq-7000's Cortex-A9, which has NEON, though Debian's armhf baseline, VFPv3-D16, does not
// promise it).
//
// On 32-bit ARM only the functions marked TESSERA_NEON carry NEON (the target attribute, no
// file-wide -mfpu=neon): shared inline functions those files instantiate (abi::requantize, the
// standard library's) stay baseline code, so the linker can never pick a NEON copy of them for a
// CPU without NEON. The loops are offered only when cpu_has_neon() says so.
#pragma once

#if defined(__aarch64__) || defined(__arm__)

#include <arm_neon.h>

#if defined(__arm__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

#if defined(__aarch64__)
#define TESSERA_NEON
#else
#define TESSERA_NEON __attribute__((target("fpu=neon")))
#endif

namespace tessera {

// aarch64 always; 32-bit ARM when the kernel reports HWCAP_NEON (`qemu-arm -cpu cortex-r5f`, a
// VFPv3-D16 CPU, does not).
inline bool cpu_has_neon() {
#if defined(__aarch64__)
  return true;
#else
  return (getauxval(AT_HWCAP) & HWCAP_NEON) != 0;
#endif
}

}  // namespace tessera

#endif  // ARM
