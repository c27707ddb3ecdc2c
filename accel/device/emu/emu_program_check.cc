#include "accel/device/emu/emu_program_check.h"

#include <cstdint>

namespace tessera::emu {
namespace {

using abi::LayerDesc;

// One past the last byte of channels [0, channel_end) of a tensor of h x w planes at offset.
uint64_t slice_end(uint32_t offset, uint64_t channel_end, uint64_t h, uint64_t w) {
  return offset + channel_end * h * w;
}

bool shift_ok(int32_t shift) { return shift >= abi::kMinShift && shift <= abi::kMaxShift; }

// Bytes each layer reads and writes, as the kernel addresses them, must lie inside the image's
// arena. Empty string when they do, else the reason.
std::string check_tensors(const LayerDesc& d, uint32_t arena_bytes) {
  const uint64_t in_end = d.op == abi::kOpConv ? d.in_channel_base + static_cast<uint64_t>(d.in_c)
                                               : d.in_channel_base + static_cast<uint64_t>(d.out_c);
  const uint64_t in_h = d.op == abi::kOpAdd ? d.out_h : d.in_h, in_w = d.op == abi::kOpAdd ? d.out_w : d.in_w;
  if (slice_end(d.in_offset, in_end, in_h, in_w) > arena_bytes) return "input tensor extends past arena_image_bytes";
  if (d.op == abi::kOpAdd &&
      slice_end(d.in2_offset, d.in2_channel_base + static_cast<uint64_t>(d.out_c), d.out_h, d.out_w) > arena_bytes) {
    return "second input tensor extends past arena_image_bytes";
  }
  if (slice_end(d.out_offset, d.out_channel_base + static_cast<uint64_t>(d.out_c), d.out_h, d.out_w) > arena_bytes) {
    return "output tensor extends past arena_image_bytes";
  }
  return {};
}

// The quant words a layer reads must exist, and its shifts must be in [kMinShift, kMaxShift].
std::string check_quant(const LayerDesc& d, const CompiledProgram& p) {
  // conv: bias, multiplier, shift per channel; add: {M_a, M_b, S}; average pool: {M, S}.
  uint64_t words = 0;
  if (d.op == abi::kOpConv) {
    words = 3ull * d.out_c;
  } else if (d.op == abi::kOpAdd) {
    words = 3;
  } else if (d.pool_kind == abi::kPoolAverage) {
    words = 2;
  }
  if (d.quant_offset + words > p.quant.size()) return "quantisation parameters extend past the quant buffer";
  const int32_t* q = p.quant.data() + d.quant_offset;
  if (d.op == abi::kOpConv) {
    for (uint32_t c = 0; c < d.out_c; ++c) {
      if (!shift_ok(q[2 * d.out_c + c])) return "shift of output channel " + std::to_string(c) + " is out of range";
    }
  } else if (words > 0 && !shift_ok(q[words - 1])) {
    return "shift is out of range";
  }
  return {};
}

// The window arithmetic (output index * stride - pad, + window) runs in int32 in the emulator's
// loops: a hostile descriptor's strides and pads must keep it there (a pool stride near 2^31
// overflowed it: fuzz_emu_program, UBSan). Each factor is below 2^32, so the sum fits uint64.
bool windows_fit(uint64_t outputs, uint64_t stride, uint64_t pad, uint64_t window) {
  return outputs == 0 || (outputs - 1) * stride + pad + window <= uint64_t{INT32_MAX};
}

bool window_arithmetic_fits(const LayerDesc& d) {
  const uint64_t kernel_h = (uint64_t{d.kernel_h} - (d.kernel_h > 0)) * d.dilation_h + 1;
  const uint64_t kernel_w = (uint64_t{d.kernel_w} - (d.kernel_w > 0)) * d.dilation_w + 1;
  return windows_fit(d.conv_h, d.stride_h, d.pad_top, kernel_h) &&
         windows_fit(d.conv_w, d.stride_w, d.pad_left, kernel_w) &&
         windows_fit(d.out_h, d.pool_stride_h, d.pool_pad_top, d.pool_h) &&
         windows_fit(d.out_w, d.pool_stride_w, d.pool_pad_left, d.pool_w);
}

std::string check_layer(const LayerDesc& d, const CompiledProgram& p) {
  if (!abi::layer_fits(d)) return "descriptor exceeds the accelerator's synthesised limits (abi::layer_fits)";
  if (!window_arithmetic_fits(d)) return "strides, pads and windows reach past int32 (no real layer is that large)";
  std::string reason = check_tensors(d, p.header.arena_image_bytes);
  if (!reason.empty()) return reason;
  if (d.op == abi::kOpConv) {
    const uint64_t weight_bytes = static_cast<uint64_t>(d.out_c) * (d.in_c / d.groups) * d.kernel_h * d.kernel_w;
    if (d.weight_offset + weight_bytes > p.weights.size()) return "weights extend past the weights buffer";
  }
  return check_quant(d, p);
}

}  // namespace

std::string layer_op_name(uint32_t op) {
  switch (op) {
    case abi::kOpConv: return "conv";
    case abi::kOpPool: return "pool";
    case abi::kOpAdd: return "add";
    default: return "op " + std::to_string(op);
  }
}

Status check_program(const CompiledProgram& p) {
  const abi::ProgramHeader& h = p.header;
  if ((h.magic != 0 && h.magic != abi::kProgramMagic) || (h.version != 0 && h.version != abi::kAbiVersion)) {
    return Status::invalid_argument("emulator: program magic/version mismatch (want ABI version " +
                                    std::to_string(abi::kAbiVersion) + ")");
  }
  if (p.layers.size() > abi::kMaxLayers) {
    return Status::invalid_argument("emulator: " + std::to_string(p.layers.size()) + " layers exceed kMaxLayers (" +
                                    std::to_string(abi::kMaxLayers) + ")");
  }
  if (static_cast<uint64_t>(h.input_offset) + p.input_bytes() > h.arena_image_bytes ||
      static_cast<uint64_t>(h.output_offset) + p.output_bytes() > h.arena_image_bytes) {
    return Status::invalid_argument("emulator: program input/output tensor extends past arena_image_bytes");
  }
  for (size_t i = 0; i < p.layers.size(); ++i) {
    const std::string reason = check_layer(p.layers[i], p);
    if (!reason.empty()) {
      return Status::invalid_argument("emulator: layer " + std::to_string(i) + " (" + layer_op_name(p.layers[i].op) +
                                      "): " + reason);
    }
  }
  return Status::ok();
}

}  // namespace tessera::emu
