#include "accel/device/emu/emu_profile.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "accel/device/emu/emu_conv_stem.h"
#include "accel/device/emu/emu_kernels.h"
#include "accel/device/emu/emu_ops.h"

namespace tessera::emu {

bool profile_enabled() { return std::getenv("TESSERA_EMU_PROFILE") != nullptr; }

namespace {

double conv_macs(const abi::LayerDesc& d) {
  const uint32_t per_group = d.in_c / d.groups;
  return static_cast<double>(d.out_c) * d.conv_h * d.conv_w * per_group * d.kernel_h * d.kernel_w;
}

// Which of the emulator's conv paths runs the layer on these kernels (emu_conv.cc's run_conv).
const char* conv_path(const EmuKernels& kernels, const abi::LayerDesc& d) {
  if (conv_uses_stem(kernels, d)) return "stem";
  if (conv_uses_implicit(kernels, d)) return "implicit";
  return conv_uses_gemm(d) ? "gemm" : "direct";
}

std::string describe(const EmuKernels& kernels, const abi::LayerDesc& d) {
  char text[160];
  if (d.op == abi::kOpConv) {
    std::snprintf(text, sizeof text, "conv %ux%u/%u g%u %ux%ux%u -> %ux%ux%u%s %s", d.kernel_h, d.kernel_w, d.stride_h,
                  d.groups, d.in_c, d.in_h, d.in_w, d.out_c, d.conv_h, d.conv_w,
                  d.pool_kind == abi::kPoolMax ? " +maxpool" : "", conv_path(kernels, d));
  } else if (d.op == abi::kOpPool) {
    std::snprintf(text, sizeof text, "%s pool %ux%u/%u %ux%ux%u -> %ux%u", d.pool_kind == abi::kPoolMax ? "max" : "avg",
                  d.pool_h, d.pool_w, d.pool_stride_h, d.in_c, d.in_h, d.in_w, d.out_h, d.out_w);
  } else {
    std::snprintf(text, sizeof text, "add %ux%ux%u", d.out_c, d.out_h, d.out_w);
  }
  return text;
}

}  // namespace

void print_profile(const std::vector<abi::LayerDesc>& layers, const EmuKernels& kernels,
                   const std::vector<LayerTime>& times) {
  double total = 0, macs = 0;
  uint64_t images = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    total += times[i].seconds;
    if (layers[i].op == abi::kOpConv) macs += conv_macs(layers[i]) * static_cast<double>(times[i].images);
    images = std::max(images, times[i].images);
  }
  if (images == 0 || total <= 0) return;
  std::fprintf(stderr, "emulator profile (%s): %zu layers, %llu images, %.3f ms per image, %.1f GMAC/s\n", kernels.name,
               layers.size(), static_cast<unsigned long long>(images), 1e3 * total / static_cast<double>(images),
               macs / total * 1e-9);
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerTime& t = times[i];
    if (t.images == 0) continue;
    const double per_image_ms = 1e3 * t.seconds / static_cast<double>(t.images);
    const double gmacs = layers[i].op == abi::kOpConv && t.seconds > 0
                             ? conv_macs(layers[i]) * static_cast<double>(t.images) / t.seconds * 1e-9
                             : 0;
    std::fprintf(stderr, "  %3zu %-52s %8.3f ms/image %5.1f%% %7.1f GMAC/s (batch %.1f)\n", i,
                 describe(kernels, layers[i]).c_str(), per_image_ms, 100 * t.seconds / total, gmacs,
                 static_cast<double>(t.images) / static_cast<double>(t.runs));
  }
}

}  // namespace tessera::emu
