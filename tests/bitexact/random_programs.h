// Random, valid (abi::layer_fits) accelerator programs for the bit-exactness test: single conv,
// pool and add layers over the whole descriptor space, and small multi-layer networks. Seeded
// and reproducible: the same seed gives the same cases on every run.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "accel/program/program.h"

namespace tessera::bitexact {

// A program, the batch to run and the initial arena (every byte random, batch images).
struct BitexactCase {
  std::string name;  // what the case is, for failure messages
  CompiledProgram program;
  uint32_t batch = 1;
  std::vector<int8_t> arena;
};

class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  // Uniform in [lo, hi] (inclusive).
  int64_t range(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(engine_() % static_cast<uint64_t>(hi - lo + 1));
  }
  uint32_t urange(uint32_t lo, uint32_t hi) { return static_cast<uint32_t>(range(lo, hi)); }
  bool chance(double p) { return static_cast<double>(engine_() >> 11) * 0x1.0p-53 < p; }
  template <class T>
  T pick(const std::vector<T>& values) {
    return values[engine_() % values.size()];
  }
  uint64_t next() { return engine_(); }

 private:
  std::mt19937_64 engine_;
};

class CaseGenerator {
 public:
  explicit CaseGenerator(uint64_t seed) : rng_(seed) {}

  BitexactCase conv_case();
  // A conv of 1-7 input channels with its kernel window folded into the MAC vector
  // (LayerDesc.fold_rows), sometimes on 224-wide rows.
  BitexactCase fold_case();
  // A 1x1 stride-1 conv of at most 32 filters: the kernel spreads pixel pairs over its lanes
  // (abi::schedule::spreads_pixels) wherever the tile's buffer pitch is its conv columns.
  BitexactCase spread_case();
  // A conv of 1-3 filters over 40-64 channels of a 64-112 square map: the emulator's direct path
  // (few filters) with more work per filter than one of its tasks, so its rows are split too.
  BitexactCase thin_case();
  // A conv whose groups have a multiple of 4 input channels (or 16 and more) and 4 or more
  // filters: the emulator's implicit GEMM on AVX-512 VNNI (quads of channels read straight from
  // the input rows), on rows up to 100 wide (several output rows, or parts of one, per panel).
  BitexactCase quad_case();
  // A conv of the implicit GEMM (4k or 16 and more input channels, 4-40 filters, one group) on a
  // map of 1-16 (or 28-29, for stride 2) rows and 1-30 columns, half of them ResNet's 3x3 with
  // padding 1, at batch 1-8: on AVX-512 VNNI, small maps run with their images' pixels end to end
  // (emu_conv_compact.cc) or by groups of images, each GEMM task over several images' sources
  // built by other tasks (emu_conv_grouped.cc).
  BitexactCase small_map_case();
  // A depthwise or thin-group conv (1-2 input and 1-3 output channels per group): the
  // emulator's direct path on maps from 1x1 to 112x112 (widths not a multiple of any vector),
  // kernels 3x3, 5x5, 1x3 and 3x1, stride 1 or 2, padding 0-2, dilation 1 or 2, sometimes a
  // fused max pool, batch 1-3.
  BitexactCase depthwise_case();
  // A conv over 3 input channels, mostly a 7x7 stride-2 stem, on maps of odd sizes up to 61x91,
  // often with a fused max pool (3x3/2 and others, some with an extra output row or column):
  // the emulator's stem path (quads of 4 kernel columns, the pool per task) on AVX-512 VNNI for
  // 4-, 7-, 8- and 11-wide kernels at column stride 1, 2 or 4; the others take the GEMM paths.
  BitexactCase stem_case();
  BitexactCase pool_case();
  BitexactCase add_case();
  // conv (+ fused pool) -> depthwise -> two convs into one concat tensor -> pool -> 1x1 conv ->
  // add (shortcut), random shapes and tiles, batch 3.
  BitexactCase network_case();

 private:
  Rng rng_;
};

// One-line summary of a descriptor ("conv 12x9x17 -> 24x5x9 k3x5 s2x1 d1x2 g3 pool 2x2/2 ...").
std::string describe(const abi::LayerDesc& d);

}  // namespace tessera::bitexact
