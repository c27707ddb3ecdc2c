// <immintrin.h> for the x86 loops that use AVX-512 (the emulator's VNNI kernels, the input
// quantisation): GCC 12's AVX-512 intrinsics initialise their "undefined" operand from itself,
// which -Wuninitialized (and GCC's -Wmaybe-uninitialized) reports where they inline, with the
// warning's location in the header. Only functions with a target attribute use the intrinsics.
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif
