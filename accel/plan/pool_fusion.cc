#include "accel/plan/pool_fusion.h"

namespace tessera::plan {
namespace {

// A max-pool the conv store half can run: window within kMaxPoolKernel, padding inside the window.
bool fusable_pool(const abi::LayerDesc& p) {
  return p.op == abi::kOpPool && p.pool_kind == abi::kPoolMax && p.pool_h >= 1 && p.pool_h <= abi::kMaxPoolKernel &&
         p.pool_w >= 1 && p.pool_w <= abi::kMaxPoolKernel && p.pool_stride_h >= 1 && p.pool_stride_w >= 1 &&
         p.pool_pad_top < p.pool_h && p.pool_pad_left < p.pool_w && p.in_channel_base == 0 &&
         p.in_c == p.in_channels_total;
}

bool reads(const abi::LayerDesc& d, uint32_t offset) {
  return d.in_offset == offset || (d.op == abi::kOpAdd && d.in2_offset == offset);
}

// The layers before `pool` that write its input tensor, if they are all plain convs of its
// spatial size covering every channel once and nothing else reads the tensor.
bool producers_of(const std::vector<abi::LayerDesc>& layers, size_t pool, uint32_t output_offset,
                  std::vector<size_t>& producers) {
  const abi::LayerDesc& p = layers[pool];
  if (!fusable_pool(p) || p.in_offset == output_offset) return false;
  std::vector<bool> channel_written(p.in_c, false);
  for (size_t i = 0; i < layers.size(); ++i) {
    const abi::LayerDesc& d = layers[i];
    if (i != pool && reads(d, p.in_offset)) return false;
    if (d.out_offset != p.in_offset) continue;
    if (i > pool || d.op != abi::kOpConv || d.pool_kind != abi::kPoolNone || d.out_channels_total != p.in_c ||
        d.out_channel_base + d.out_c > p.in_c || d.out_h != p.in_h || d.out_w != p.in_w || d.conv_h != p.in_h ||
        d.conv_w != p.in_w)
      return false;
    for (uint32_t c = d.out_channel_base; c < d.out_channel_base + d.out_c; ++c) {
      if (channel_written[c]) return false;
      channel_written[c] = true;
    }
    producers.push_back(i);
  }
  for (bool written : channel_written) {
    if (!written) return false;
  }
  return !producers.empty();
}

}  // namespace

uint32_t fuse_pools_into_producers(std::vector<abi::LayerDesc>& layers, std::vector<std::string>& names,
                                   uint32_t output_offset) {
  uint32_t folded = 0;
  for (size_t i = 0; i < layers.size();) {
    std::vector<size_t> producers;
    if (!producers_of(layers, i, output_offset, producers)) {
      ++i;
      continue;
    }
    const abi::LayerDesc p = layers[i];
    for (size_t j : producers) {
      abi::LayerDesc& c = layers[j];
      c.pool_kind = abi::kPoolMax;
      c.pool_h = p.pool_h;
      c.pool_w = p.pool_w;
      c.pool_stride_h = p.pool_stride_h;
      c.pool_stride_w = p.pool_stride_w;
      c.pool_pad_top = p.pool_pad_top;
      c.pool_pad_left = p.pool_pad_left;
      c.out_h = p.out_h;
      c.out_w = p.out_w;
      c.out_offset = p.out_offset;
      c.out_channel_base += p.out_channel_base;
      c.out_channels_total = p.out_channels_total;
    }
    layers.erase(layers.begin() + static_cast<std::ptrdiff_t>(i));
    names.erase(names.begin() + static_cast<std::ptrdiff_t>(i));
    ++folded;
  }
  return folded;
}

}  // namespace tessera::plan
