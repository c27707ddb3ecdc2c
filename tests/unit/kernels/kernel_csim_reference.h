// The C-simulation tests' yardstick (test_kernel_csim_*.cc): a naive int8 reference of conv,
// pool and add written with plain loops, the kernel run on a built net, and byte comparisons.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "accel/program/program.h"
#include "kernels/kernel_abi.h"
#include "kernels/tessera_accel.h"
#include "tests/unit/kernels/kernel_csim_net_builder.h"

namespace tessera::csim_test {

// ---- The naive reference -----------------------------------------------------------------------

inline int8_t read_at(const int8_t* img, uint32_t offset, uint32_t chan, uint32_t h, uint32_t w, uint32_t y,
                      uint32_t x) {
  return img[offset + (static_cast<size_t>(chan) * h + y) * w + x];
}

inline void ref_conv(const LayerDesc& d, const std::vector<int8_t>& weights, const std::vector<int32_t>& quant,
                     int8_t* img) {
  const uint32_t opg = d.out_c / d.groups, ipg = d.in_c / d.groups;
  std::vector<int32_t> conv(static_cast<size_t>(d.out_c) * d.conv_h * d.conv_w);
  for (uint32_t oc = 0; oc < d.out_c; ++oc) {
    const uint32_t g = oc / opg;
    const int32_t bias = quant[d.quant_offset + oc];
    const int32_t mult = quant[d.quant_offset + d.out_c + oc];
    const int32_t shift = quant[d.quant_offset + 2 * d.out_c + oc];
    for (uint32_t y = 0; y < d.conv_h; ++y) {
      for (uint32_t x = 0; x < d.conv_w; ++x) {
        int64_t sum = bias;
        for (uint32_t icl = 0; icl < ipg; ++icl) {
          for (uint32_t ky = 0; ky < d.kernel_h; ++ky) {
            for (uint32_t kx = 0; kx < d.kernel_w; ++kx) {
              const int64_t iy = int64_t{y} * d.stride_h + int64_t{ky} * d.dilation_h - d.pad_top;
              const int64_t ix = int64_t{x} * d.stride_w + int64_t{kx} * d.dilation_w - d.pad_left;
              if (iy < 0 || iy >= d.in_h || ix < 0 || ix >= d.in_w) continue;  // zero padding
              const int8_t a = read_at(img, d.in_offset, d.in_channel_base + g * ipg + icl, d.in_h, d.in_w,
                                       static_cast<uint32_t>(iy), static_cast<uint32_t>(ix));
              const int8_t w = weights[d.weight_offset + ((oc * ipg + icl) * d.kernel_h + ky) * d.kernel_w + kx];
              sum += int64_t{a} * w;
            }
          }
        }
        const auto acc = static_cast<int32_t>(static_cast<uint32_t>(sum));  // int32, wrapping
        conv[(static_cast<size_t>(oc) * d.conv_h + y) * d.conv_w + x] =
            abi::requantize(acc, mult, shift, d.act_lo, d.act_hi);
      }
    }
  }
  for (uint32_t oc = 0; oc < d.out_c; ++oc) {
    for (uint32_t y = 0; y < d.out_h; ++y) {
      for (uint32_t x = 0; x < d.out_w; ++x) {
        int32_t v;
        if (d.pool_kind == abi::kPoolMax) {
          v = -128;  // padded positions never win; an empty window stays at -128
          for (uint32_t wy = 0; wy < d.pool_h; ++wy) {
            for (uint32_t wx = 0; wx < d.pool_w; ++wx) {
              const int64_t cy = int64_t{y} * d.pool_stride_h + wy - d.pool_pad_top;
              const int64_t cx = int64_t{x} * d.pool_stride_w + wx - d.pool_pad_left;
              if (cy < 0 || cy >= d.conv_h || cx < 0 || cx >= d.conv_w) continue;
              v = std::max(v, conv[(static_cast<size_t>(oc) * d.conv_h + cy) * d.conv_w + cx]);
            }
          }
        } else {
          v = conv[(static_cast<size_t>(oc) * d.conv_h + y) * d.conv_w + x];
        }
        img[d.out_offset + (static_cast<size_t>(d.out_channel_base + oc) * d.out_h + y) * d.out_w + x] =
            static_cast<int8_t>(v);
      }
    }
  }
}

inline void ref_pool(const LayerDesc& d, const std::vector<int32_t>& quant, int8_t* img) {
  for (uint32_t c = 0; c < d.out_c; ++c) {
    for (uint32_t y = 0; y < d.out_h; ++y) {
      for (uint32_t x = 0; x < d.out_w; ++x) {
        int32_t max = -128, sum = 0;
        for (uint32_t wy = 0; wy < d.pool_h; ++wy) {
          for (uint32_t wx = 0; wx < d.pool_w; ++wx) {
            const int64_t iy = int64_t{y} * d.pool_stride_h + wy - d.pool_pad_top;
            const int64_t ix = int64_t{x} * d.pool_stride_w + wx - d.pool_pad_left;
            if (iy < 0 || iy >= d.in_h || ix < 0 || ix >= d.in_w) continue;
            const int32_t v = read_at(img, d.in_offset, d.in_channel_base + c, d.in_h, d.in_w,
                                      static_cast<uint32_t>(iy), static_cast<uint32_t>(ix));
            max = std::max(max, v);
            sum += v;
          }
        }
        const int32_t out =
            d.pool_kind == abi::kPoolMax
                ? max
                : abi::requantize(sum, quant[d.quant_offset], quant[d.quant_offset + 1], d.act_lo, d.act_hi);
        img[d.out_offset + (static_cast<size_t>(d.out_channel_base + c) * d.out_h + y) * d.out_w + x] =
            static_cast<int8_t>(out);
      }
    }
  }
}

inline void ref_add(const LayerDesc& d, const std::vector<int32_t>& quant, int8_t* img) {
  const uint32_t plane = d.out_h * d.out_w;
  for (uint32_t c = 0; c < d.out_c; ++c) {
    for (uint32_t p = 0; p < plane; ++p) {
      const int8_t a = img[d.in_offset + (d.in_channel_base + c) * plane + p];
      const int8_t b = img[d.in2_offset + (d.in2_channel_base + c) * plane + p];
      img[d.out_offset + (d.out_channel_base + c) * plane + p] = static_cast<int8_t>(abi::requantize_add(
          a, b, quant[d.quant_offset], quant[d.quant_offset + 1], quant[d.quant_offset + 2], d.act_lo, d.act_hi));
    }
  }
}

inline std::vector<int8_t> run_reference(const NetBuilder& net) {
  const CompiledProgram& p = net.program();
  std::vector<int8_t> arena = net.arena();
  for (uint32_t n = 0; n < net.batch(); ++n) {
    int8_t* img = arena.data() + static_cast<size_t>(n) * p.header.arena_image_bytes;
    for (const LayerDesc& d : p.layers) {
      if (d.op == abi::kOpConv) ref_conv(d, p.weights, p.quant, img);
      if (d.op == abi::kOpPool) ref_pool(d, p.quant, img);
      if (d.op == abi::kOpAdd) ref_add(d, p.quant, img);
    }
  }
  return arena;
}

// ---- Running the C simulation ------------------------------------------------------------------

struct KernelRun {
  std::vector<int8_t> arena;
  uint32_t status[abi::kStatusWords] = {0xdeadu, 0xdeadu};
};

inline KernelRun run_words(const NetBuilder& net, const std::vector<uint32_t>& words) {
  KernelRun run;
  run.arena = net.arena();
  tessera_accel(words.data(), net.program().weights.data(), net.program().quant.data(), run.arena.data(), run.status);
  return run;
}

inline KernelRun run_kernel(const NetBuilder& net) { return run_words(net, net.program().program_words(net.batch())); }

// "" when equal, else where the first difference is.
inline std::string first_difference(const std::vector<int8_t>& got, const std::vector<int8_t>& want) {
  if (got.size() != want.size()) return "sizes differ";
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i]) {
      std::ostringstream os;
      os << "byte " << i << ": kernel " << int{got[i]} << ", reference " << int{want[i]};
      return os.str();
    }
  }
  return "";
}

inline std::string tiles_of(const LayerDesc& d) {
  std::ostringstream os;
  os << "tiles m" << d.tile_m << " n" << d.tile_n << " r" << d.tile_r << " c" << d.tile_c;
  return os.str();
}

// Runs the kernel on the net as built and checks it against the reference, bit for bit.
inline void expect_matches_reference(const NetBuilder& net, const std::string& what) {
  const KernelRun run = run_kernel(net);
  ASSERT_EQ(run.status[0], abi::kRunOk) << what << " (layer " << run.status[1] << ")";
  const std::string diff = first_difference(run.arena, run_reference(net));
  EXPECT_TRUE(diff.empty()) << what << ": " << diff;
}

// Random tile choice for layer `index` that layer_fits() accepts.
inline void randomise_tiles(NetBuilder& net, size_t index) {
  LayerDesc& d = net.layers()[index];
  for (int attempt = 0; attempt < 1000; ++attempt) {
    LayerDesc t = d;
    t.tile_m = static_cast<uint32_t>(net.uniform(1, static_cast<int32_t>(std::min<uint32_t>(d.out_c, abi::kMaxTileM))));
    if (d.op == abi::kOpConv) {
      const uint32_t opg = d.out_c / d.groups;
      if (net.uniform(0, 2) == 0 && opg <= abi::kMaxTileM) t.tile_m = opg * static_cast<uint32_t>(net.uniform(1, 4));
      t.tile_n = static_cast<uint32_t>(net.uniform(1, static_cast<int32_t>(d.in_c / d.groups)));
      // Input stationary half the time where the kernel runs it (every input channel in the tile).
      t.loop_order = abi::kLoopOutputStationary;
      if (d.groups == 1 && net.uniform(0, 1) == 0) {
        t.tile_n = d.in_c;
        t.loop_order = abi::kLoopInputStationary;
      }
    }
    t.tile_r = static_cast<uint32_t>(net.uniform(1, static_cast<int32_t>(std::min<uint32_t>(d.out_h + 2, 64))));
    t.tile_c = static_cast<uint32_t>(net.uniform(1, static_cast<int32_t>(std::min<uint32_t>(d.out_w + 2, 64))));
    if (abi::layer_fits(t)) {
      d = t;
      return;
    }
  }
  FAIL() << "no fitting tiles found for layer " << index;
}

}  // namespace tessera::csim_test
