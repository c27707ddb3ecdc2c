#include "random_programs.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

namespace tessera::bitexact {
namespace {

using abi::LayerDesc;

uint32_t align64(uint64_t x) { return static_cast<uint32_t>((x + 63) / 64 * 64); }

// Output length of a window sweep: floor((in + pads - extent) / stride) + 1, 0 when negative.
uint32_t sweep(uint32_t in, uint32_t pad_a, uint32_t pad_b, uint32_t extent, uint32_t stride) {
  const int64_t span = static_cast<int64_t>(in) + pad_a + pad_b - extent;
  return span < 0 ? 0 : static_cast<uint32_t>(span / stride + 1);
}

// A channel slice [base, base + c) of a tensor of `total` channels of h x w at `offset`.
struct Slice {
  uint32_t offset, total, base, c, h, w;
};

// Convolution geometry before tiles: the generator's free choices.
struct ConvChoice {
  uint32_t groups = 1, out_c = 1;
  uint32_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  uint32_t pt = 0, pb = 0, pl = 0, pr = 0;
  bool pool = false;
  uint32_t ph = 2, pw = 2, psh = 2, psw = 2, ppt = 0, ppb = 0, ppl = 0, ppr = 0;
  uint32_t extra_h = 0, extra_w = 0;  // ceil-mode style extra output rows/cols of the pool
};

// Work of the C simulation for one image (its MAC loops run over the full 64-wide channel
// vector), to keep the whole test fast.
uint64_t csim_cost(const LayerDesc& d) {
  if (d.op != abi::kOpConv) return static_cast<uint64_t>(d.out_c) * d.out_h * d.out_w * d.pool_h * d.pool_w;
  const uint32_t pooled = d.pool_kind == abi::kPoolMax;
  const uint64_t conv_rows = pooled ? (d.tile_r - 1) * d.pool_stride_h + d.pool_h : d.tile_r;
  const uint64_t conv_cols = pooled ? (d.tile_c - 1) * d.pool_stride_w + d.pool_w : d.tile_c;
  const uint64_t in_pg = d.in_c / d.groups;
  const uint64_t steps = static_cast<uint64_t>((d.out_c + d.tile_m - 1) / d.tile_m) *
                         ((d.out_h + d.tile_r - 1) / d.tile_r) * ((d.out_w + d.tile_c - 1) / d.tile_c) *
                         ((in_pg + d.tile_n - 1) / d.tile_n);
  return steps * d.kernel_h * d.kernel_w * (4096 + conv_rows * conv_cols * 64 * (1 + d.tile_m));
}

constexpr uint64_t kCostBudget = 40'000'000;

void random_activation(Rng& rng, LayerDesc& d) {
  const uint32_t kind = rng.urange(0, 9);
  if (kind < 4) {
    d.act_lo = -128, d.act_hi = 127;  // none
  } else if (kind < 7) {
    d.act_lo = 0, d.act_hi = 127;  // ReLU
  } else if (kind < 9) {
    d.act_lo = 0, d.act_hi = static_cast<int32_t>(rng.urange(1, 126));  // ReLU6-style
  } else {
    d.act_lo = static_cast<int32_t>(rng.range(-128, 60));
    d.act_hi = static_cast<int32_t>(rng.range(d.act_lo, 127));
  }
}

// Uniform in [2^29, 2^31); one in five is 2^30 exactly, so that products land exactly half-way
// between two outputs now and then and the round-half-up rule is exercised.
int32_t random_multiplier(Rng& rng) {
  if (rng.chance(0.2)) return 1 << 30;
  return static_cast<int32_t>(rng.range(int64_t{1} << 29, (int64_t{1} << 31) - 1));
}

// A shift that maps magnitude `typical` (times a ~2^30 multiplier) to about +-32, so that most
// outputs land inside the clamp range; sometimes anywhere in [20, 40].
int32_t random_shift(Rng& rng, double typical) {
  if (rng.chance(0.2)) return static_cast<int32_t>(rng.range(20, 40));
  const int64_t useful = std::lround(std::log2(std::max(typical, 1.0)) + 30 - 5);
  return static_cast<int32_t>(std::clamp<int64_t>(useful + rng.range(-2, 1), 20, 46));
}

// Bias: mostly of the accumulator's magnitude, sometimes anywhere in +-2^20.
int32_t random_bias(Rng& rng, double typical) {
  const int64_t bound = rng.chance(0.2) ? (1 << 20) : std::min<int64_t>(1 << 20, std::llround(typical) + 1);
  return static_cast<int32_t>(rng.range(-bound, bound));
}

class ProgramBuilder {
 public:
  explicit ProgramBuilder(Rng& rng) : rng_(rng) {
    layout_ = rng_.urange(0, 2) * 64;  // tensors need not start at 0
    program_.weights.resize(rng_.urange(0, 100));
    for (int8_t& v : program_.weights) v = static_cast<int8_t>(rng_.next());
    program_.quant.resize(rng_.urange(0, 5));
    for (int32_t& v : program_.quant) v = static_cast<int32_t>(rng_.next());
  }

  // A fresh tensor of `c` channels (plus 0-3 spare ones for the slicing) in the arena.
  Slice tensor(uint32_t c, uint32_t h, uint32_t w, bool spare_channels = true) {
    const uint32_t spare = spare_channels && rng_.chance(0.4) ? rng_.urange(1, 3) : 0;
    const uint32_t base = spare > 0 ? rng_.urange(0, spare) : 0;
    Slice s{layout_, c + spare, base, c, h, w};
    layout_ = align64(static_cast<uint64_t>(layout_) + static_cast<uint64_t>(s.total) * h * w);
    return s;
  }

  // Adds a conv layer reading `in`; writes `out` when given, else a fresh tensor. Returns the
  // output slice, or nothing when the geometry is empty, no tile fits or it costs too much.
  std::optional<Slice> conv(const Slice& in, const ConvChoice& g, std::optional<Slice> out = std::nullopt) {
    LayerDesc d{};
    d.op = abi::kOpConv;
    set_input(d, in);
    d.groups = g.groups;
    d.out_c = g.out_c;
    d.kernel_h = g.kh, d.kernel_w = g.kw, d.stride_h = g.sh, d.stride_w = g.sw;
    d.dilation_h = g.dh, d.dilation_w = g.dw, d.pad_top = g.pt, d.pad_left = g.pl;
    d.conv_h = sweep(in.h, g.pt, g.pb, (g.kh - 1) * g.dh + 1, g.sh);
    d.conv_w = sweep(in.w, g.pl, g.pr, (g.kw - 1) * g.dw + 1, g.sw);
    if (d.conv_h == 0 || d.conv_w == 0) return std::nullopt;
    d.out_h = d.conv_h, d.out_w = d.conv_w;
    if (g.pool) {
      d.pool_kind = abi::kPoolMax;
      d.pool_h = g.ph, d.pool_w = g.pw, d.pool_stride_h = g.psh, d.pool_stride_w = g.psw;
      d.pool_pad_top = g.ppt, d.pool_pad_left = g.ppl;
      d.out_h = sweep(d.conv_h, g.ppt, g.ppb, g.ph, g.psh);
      d.out_w = sweep(d.conv_w, g.ppl, g.ppr, g.pw, g.psw);
      if (d.out_h == 0 || d.out_w == 0) return std::nullopt;
      d.out_h += g.extra_h, d.out_w += g.extra_w;
    }
    if (out && (out->h != d.out_h || out->w != d.out_w || out->c != d.out_c)) return std::nullopt;
    random_activation(rng_, d);
    d.out_channels_total = d.out_c;  // the real slice comes with the output tensor
    if (!conv_tiles(d)) return std::nullopt;
    if (csim_cost(d) > kCostBudget) return std::nullopt;
    const Slice o = out ? *out : tensor(d.out_c, d.out_h, d.out_w);
    set_output(d, o);
    conv_params(d);
    program_.layers.push_back(d);
    return o;
  }

  // Adds a standalone pool layer; `out_c == in.c`.
  std::optional<Slice> pool(const Slice& in, uint32_t kind, uint32_t ph, uint32_t pw, uint32_t sh, uint32_t sw,
                            uint32_t pt, uint32_t pb, uint32_t pl, uint32_t pr, uint32_t extra_h, uint32_t extra_w) {
    LayerDesc d{};
    d.op = abi::kOpPool;
    set_input(d, in);
    d.out_c = in.c;
    d.pool_kind = kind;
    d.pool_h = ph, d.pool_w = pw, d.pool_stride_h = sh, d.pool_stride_w = sw, d.pool_pad_top = pt, d.pool_pad_left = pl;
    d.out_h = sweep(in.h, pt, pb, ph, sh), d.out_w = sweep(in.w, pl, pr, pw, sw);
    if (d.out_h == 0 || d.out_w == 0) return std::nullopt;
    d.out_h += extra_h, d.out_w += extra_w;
    d.tile_m = rng_.urange(1, 64), d.tile_n = 1, d.tile_r = rng_.urange(1, 64), d.tile_c = rng_.urange(1, 64);
    random_activation(rng_, d);
    d.out_channels_total = d.out_c;
    if (!abi::layer_fits(d)) return std::nullopt;
    const Slice o = tensor(d.out_c, d.out_h, d.out_w);
    set_output(d, o);
    if (kind == abi::kPoolAverage) {
      d.quant_offset = quant_gap();
      const int32_t m = random_multiplier(rng_);
      program_.quant.push_back(m);
      // Mean of the window: M / 2^S ~ 1 / (ph * pw), i.e. S ~ 30 + log2(window); typical 64.
      program_.quant.push_back(random_shift(rng_, 64.0 * ph * pw));
    }
    program_.layers.push_back(d);
    return o;
  }

  // Adds y = a + b (requantised); out may alias a (in-place) when given.
  Slice add(const Slice& a, const Slice& b, std::optional<Slice> out = std::nullopt) {
    LayerDesc d{};
    d.op = abi::kOpAdd;
    set_input(d, a);
    d.in2_offset = b.offset, d.in2_channel_base = b.base, d.in2_channels_total = b.total;
    d.out_c = a.c, d.out_h = a.h, d.out_w = a.w;
    // Chunks of tile_r x tile_c bytes, up to abi::kAddChunkBytes (128 x 256).
    d.tile_m = rng_.urange(1, 64), d.tile_n = 1, d.tile_r = rng_.urange(1, 128), d.tile_c = rng_.urange(1, 256);
    random_activation(rng_, d);
    const Slice o = out ? *out : tensor(a.c, a.h, a.w);
    set_output(d, o);
    d.quant_offset = quant_gap();
    program_.quant.push_back(random_multiplier(rng_));
    program_.quant.push_back(random_multiplier(rng_));
    program_.quant.push_back(random_shift(rng_, 128.0));
    program_.layers.push_back(d);
    return o;
  }

  // Finishes the program (input/output tensors, arena size) and draws a random arena.
  BitexactCase finish(std::string name, const Slice& input, const Slice& output, uint32_t batch) {
    BitexactCase c;
    c.name = std::move(name);
    c.batch = batch;
    program_.header.arena_image_bytes = layout_ + rng_.urange(0, 100);
    program_.header.input_offset = input.offset;
    program_.header.output_offset = output.offset;
    program_.input_c = input.total, program_.input_h = input.h, program_.input_w = input.w;
    program_.output_c = output.total, program_.output_h = output.h, program_.output_w = output.w;
    program_.weights.resize(program_.weights.size() + rng_.urange(0, 64));
    for (const LayerDesc& d : program_.layers) c.name += "\n  " + describe(d);
    c.program = std::move(program_);
    c.arena.resize(static_cast<size_t>(batch) * c.program.header.arena_image_bytes);
    for (int8_t& v : c.arena) v = static_cast<int8_t>(rng_.next());
    return c;
  }

  Rng& rng() { return rng_; }

 private:
  static void set_input(LayerDesc& d, const Slice& in) {
    d.in_c = in.c, d.in_h = in.h, d.in_w = in.w;
    d.in_offset = in.offset, d.in_channel_base = in.base, d.in_channels_total = in.total;
  }
  static void set_output(LayerDesc& d, const Slice& out) {
    d.out_offset = out.offset, d.out_channel_base = out.base, d.out_channels_total = out.total;
  }

  // Random tiles satisfying abi::layer_fits, shrinking the spatial tile when it does not fit.
  bool conv_tiles(LayerDesc& d) {
    const uint32_t out_pg = d.out_c / d.groups, in_pg = d.in_c / d.groups;
    std::vector<uint32_t> tile_ms;
    for (uint32_t t = 1; t <= abi::kMaxTileM; ++t) {
      if (out_pg % t == 0 || t % out_pg == 0) tile_ms.push_back(t);
    }
    for (uint32_t attempt = 0; attempt < 200; ++attempt) {
      d.tile_m = rng_.chance(0.3) ? tile_ms.back() : rng_.pick(tile_ms);
      const uint32_t groups_in_tile = d.tile_m > out_pg ? d.tile_m / out_pg : 1;
      const uint32_t max_n = std::min(groups_in_tile > 1 ? abi::kMaxVector / groups_in_tile : abi::kMaxTileN, in_pg);
      if (max_n == 0) continue;
      d.tile_n = rng_.chance(0.5) ? max_n : rng_.urange(1, max_n);
      const uint32_t shrink = attempt / 25;
      d.tile_r = std::max(1u, rng_.urange(1, std::min(64u, d.out_h + 2)) >> shrink);
      d.tile_c = std::max(1u, rng_.urange(1, std::min(64u, d.out_w + 2)) >> shrink);
      // The window fold (LayerDesc.fold_rows) where it applies; always when asked for.
      const uint32_t window = d.kernel_h * d.kernel_w;
      if (fold_rows_ && d.groups == 1 && d.kernel_h > 1 && window <= abi::kMaxVector)
        d.tile_n = std::min(d.tile_n, abi::kMaxVector / window);
      const bool can_fold = d.groups == 1 && d.kernel_h > 1 && d.dilation_h == 1 && d.dilation_w == 1 &&
                            d.tile_n * window <= abi::kMaxVector;
      d.fold_rows = can_fold && (fold_rows_ || rng_.chance(0.5)) ? 1 : 0;
      // The kernel's input-stationary order where it applies (every input channel in the tile).
      const bool stationary = d.groups == 1 && d.tile_n == in_pg && rng_.chance(0.5);
      d.loop_order = stationary ? abi::kLoopInputStationary : abi::kLoopOutputStationary;
      if (abi::layer_fits(d)) return true;
    }
    return false;
  }

  uint32_t quant_gap() {
    const uint32_t gap = rng_.urange(0, 3);
    for (uint32_t i = 0; i < gap; ++i) program_.quant.push_back(static_cast<int32_t>(rng_.next()));
    return static_cast<uint32_t>(program_.quant.size());
  }

  // Random weights (full int8 range) and per-channel bias / multiplier / shift.
  void conv_params(LayerDesc& d) {
    const uint64_t k = static_cast<uint64_t>(d.in_c / d.groups) * d.kernel_h * d.kernel_w;
    const size_t used = program_.weights.size();
    d.weight_offset = align64(used) + rng_.urange(0, 1) * 64;
    program_.weights.resize(d.weight_offset + d.out_c * k);
    for (size_t i = used; i < program_.weights.size(); ++i) program_.weights[i] = static_cast<int8_t>(rng_.next());
    d.quant_offset = quant_gap();
    const double typical = 5461.0 * std::sqrt(static_cast<double>(k));  // std of a sum of k int8 x int8
    for (uint32_t c = 0; c < d.out_c; ++c) program_.quant.push_back(random_bias(rng_, typical));
    for (uint32_t c = 0; c < d.out_c; ++c) program_.quant.push_back(random_multiplier(rng_));
    for (uint32_t c = 0; c < d.out_c; ++c) program_.quant.push_back(random_shift(rng_, typical));
  }

  Rng& rng_;
  CompiledProgram program_;
  uint32_t layout_ = 0;

 public:
  bool fold_rows_ = false;  // convs fold their kernel window wherever they can (fold_case)
};

uint32_t random_kernel(Rng& rng) {
  return rng.chance(0.75) ? rng.pick<uint32_t>({1, 1, 2, 3, 3, 3, 5, 7}) : rng.urange(1, 11);
}

uint32_t random_stride(Rng& rng) { return rng.pick<uint32_t>({1, 1, 1, 2, 2, 3, 4}); }

// Random conv geometry for an input of `in_c` channels with a channel budget of 70.
ConvChoice random_conv_choice(Rng& rng, uint32_t in_c) {
  ConvChoice g;
  const uint32_t kind = rng.urange(0, 9);
  if (kind < 5) {
    g.groups = 1, g.out_c = rng.urange(1, 70);
  } else if (kind < 7) {  // depthwise, sometimes with a channel multiplier of 2
    g.groups = in_c, g.out_c = in_c * (in_c <= 35 && rng.chance(0.3) ? 2 : 1);
  } else {  // 2-4 groups
    std::vector<uint32_t> options;
    for (uint32_t gr = 2; gr <= 4; ++gr) {
      if (in_c % gr == 0) options.push_back(gr);
    }
    g.groups = options.empty() ? 1 : rng.pick(options);
    g.out_c = g.groups * rng.urange(1, 70 / g.groups);
  }
  g.kh = random_kernel(rng);
  g.kw = rng.chance(0.7) ? g.kh : random_kernel(rng);
  g.sh = random_stride(rng);
  g.sw = rng.chance(0.7) ? g.sh : random_stride(rng);
  g.dh = rng.chance(0.8) ? 1 : rng.urange(2, rng.chance(0.8) ? 2 : 4);
  g.dw = rng.chance(0.7) ? g.dh : rng.urange(1, 2);
  const uint32_t ekh = (g.kh - 1) * g.dh + 1, ekw = (g.kw - 1) * g.dw + 1;
  g.pt = rng.urange(0, ekh - 1), g.pb = rng.urange(0, ekh - 1);
  g.pl = rng.urange(0, ekw - 1), g.pr = rng.urange(0, ekw - 1);
  if (rng.chance(0.35)) {
    g.pool = true;
    g.ph = rng.chance(0.9) ? rng.urange(2, 3) : 1;
    g.pw = rng.chance(0.7) ? g.ph : rng.urange(2, 3);
    g.psh = rng.urange(1, 2), g.psw = rng.chance(0.7) ? g.psh : rng.urange(1, 2);
    g.ppt = rng.urange(0, g.ph - 1), g.ppb = rng.urange(0, g.ph - 1);
    g.ppl = rng.urange(0, g.pw - 1), g.ppr = rng.urange(0, g.pw - 1);
    g.extra_h = rng.chance(0.15) ? 1 : 0, g.extra_w = rng.chance(0.15) ? 1 : 0;
  }
  return g;
}

}  // namespace

std::string describe(const LayerDesc& d) {
  std::ostringstream s;
  const char* op = d.op == abi::kOpConv ? "conv" : d.op == abi::kOpPool ? "pool" : "add";
  s << op << " " << d.in_c << "x" << d.in_h << "x" << d.in_w << " [" << d.in_channel_base << "/" << d.in_channels_total
    << "] -> " << d.out_c << "x" << d.out_h << "x" << d.out_w << " [" << d.out_channel_base << "/"
    << d.out_channels_total << "]";
  if (d.op == abi::kOpConv) {
    s << " conv " << d.conv_h << "x" << d.conv_w << " k" << d.kernel_h << "x" << d.kernel_w << " s" << d.stride_h << "x"
      << d.stride_w << " d" << d.dilation_h << "x" << d.dilation_w << " p" << d.pad_top << "," << d.pad_left << " g"
      << d.groups;
  }
  if (d.pool_kind != abi::kPoolNone) {
    s << (d.pool_kind == abi::kPoolMax ? " maxpool " : " avgpool ") << d.pool_h << "x" << d.pool_w << "/"
      << d.pool_stride_h << "x" << d.pool_stride_w << " p" << d.pool_pad_top << "," << d.pool_pad_left;
  }
  s << " act[" << d.act_lo << "," << d.act_hi << "] tiles " << d.tile_m << "," << d.tile_n << "," << d.tile_r << ","
    << d.tile_c << (d.loop_order == abi::kLoopInputStationary ? " IS" : "") << (d.fold_rows ? " fold_rows" : "");
  return s.str();
}

BitexactCase CaseGenerator::conv_case() {
  for (;;) {
    ProgramBuilder b(rng_);
    const uint32_t in_c = rng_.urange(1, 70);
    const Slice in = b.tensor(in_c, rng_.urange(1, 40), rng_.urange(1, 40));
    const std::optional<Slice> out = b.conv(in, random_conv_choice(rng_, in_c));
    if (out) return b.finish("conv", in, *out, rng_.urange(1, 2));
  }
}

BitexactCase CaseGenerator::fold_case() {
  for (;;) {
    ProgramBuilder b(rng_);
    b.fold_rows_ = true;
    const uint32_t in_c = rng_.urange(1, 7);
    const Slice in = b.tensor(in_c, rng_.urange(2, 40), rng_.urange(1, 40 + 200 * rng_.chance(0.2)));
    ConvChoice g = random_conv_choice(rng_, in_c);
    g.groups = 1, g.dh = 1, g.dw = 1;
    g.kh = rng_.urange(2, 5), g.kw = rng_.urange(1, 5);
    g.pt = rng_.urange(0, g.kh - 1), g.pb = rng_.urange(0, g.kh - 1);
    g.pl = rng_.urange(0, g.kw - 1), g.pr = rng_.urange(0, g.kw - 1);
    const std::optional<Slice> out = b.conv(in, g);
    if (out) return b.finish("fold", in, *out, rng_.urange(1, 2));
  }
}

BitexactCase CaseGenerator::spread_case() {
  for (;;) {
    ProgramBuilder b(rng_);
    const uint32_t in_c = rng_.urange(1, 70);
    const Slice in = b.tensor(in_c, rng_.urange(1, 40), rng_.urange(1, 40 + 100 * rng_.chance(0.2)));
    ConvChoice g = random_conv_choice(rng_, in_c);
    g.groups = 1, g.out_c = rng_.urange(1, 32);
    g.kh = g.kw = g.sh = g.sw = 1;
    g.pt = g.pb = g.pl = g.pr = 0;
    const std::optional<Slice> out = b.conv(in, g);
    if (out) return b.finish("spread", in, *out, rng_.urange(1, 2));
  }
}

BitexactCase CaseGenerator::thin_case() {
  for (;;) {
    ProgramBuilder b(rng_);
    const uint32_t in_c = rng_.urange(40, 64);
    const Slice in = b.tensor(in_c, rng_.urange(64, 112), rng_.urange(64, 112));
    ConvChoice g = random_conv_choice(rng_, in_c);
    g.groups = 1, g.out_c = rng_.urange(1, 3);
    g.kh = rng_.pick<uint32_t>({3, 5}), g.kw = rng_.chance(0.7) ? g.kh : 3;
    g.sh = g.sw = g.dh = g.dw = 1;
    g.pt = g.pb = g.kh / 2, g.pl = g.pr = g.kw / 2;
    // Over the emulator's direct-path task size (4 Mi MACs) per output channel: split by rows.
    if (static_cast<uint64_t>(in.h) * in.w * in_c * g.kh * g.kw <= (4u << 20)) continue;
    const std::optional<Slice> out = b.conv(in, g);
    if (out) return b.finish("thin", in, *out, rng_.urange(1, 2));
  }
}

BitexactCase CaseGenerator::quad_case() {
  for (;;) {
    ProgramBuilder b(rng_);
    const uint32_t groups = rng_.chance(0.8) ? 1 : 2;
    const uint32_t per_group = rng_.chance(0.8) ? 4 * rng_.urange(1, 12) : rng_.urange(16, 40);
    const uint32_t in_c = groups * per_group;
    const Slice in = b.tensor(in_c, rng_.urange(1, 24), rng_.urange(1, 100));
    ConvChoice g = random_conv_choice(rng_, in_c);
    g.groups = groups;
    g.out_c = groups * rng_.urange(4, 40);
    const std::optional<Slice> out = b.conv(in, g);
    if (out) return b.finish("quad", in, *out, rng_.urange(1, 2));
  }
}

BitexactCase CaseGenerator::stem_case() {
  for (;;) {
    ProgramBuilder b(rng_);
    const Slice in = b.tensor(3, rng_.urange(5, 61), rng_.urange(5, 91));
    ConvChoice g = random_conv_choice(rng_, 3);
    g.groups = 1, g.out_c = rng_.chance(0.3) ? 64 : rng_.urange(4, 70);
    g.kh = rng_.chance(0.6) ? 7 : rng_.urange(1, 11);
    g.kw = rng_.chance(0.6) ? 7 : rng_.pick<uint32_t>({3, 4, 5, 8, 11});
    g.sh = rng_.chance(0.6) ? 2 : rng_.urange(1, 4);
    g.sw = rng_.chance(0.7) ? 2 : rng_.pick<uint32_t>({1, 2, 3, 4});
    g.dh = rng_.chance(0.85) ? 1 : 2, g.dw = rng_.chance(0.9) ? 1 : 2;
    const uint32_t ekh = (g.kh - 1) * g.dh + 1, ekw = (g.kw - 1) * g.dw + 1;
    g.pt = rng_.chance(0.5) ? g.kh / 2 : rng_.urange(0, ekh - 1);
    g.pb = rng_.chance(0.5) ? g.pt : rng_.urange(0, ekh - 1);
    g.pl = rng_.chance(0.5) ? g.kw / 2 : rng_.urange(0, ekw - 1);
    g.pr = rng_.chance(0.5) ? g.pl : rng_.urange(0, ekw - 1);
    g.pool = rng_.chance(0.6);
    if (g.pool) {
      const bool resnet = rng_.chance(0.5);  // 3x3/2 pad 1
      g.ph = resnet ? 3 : rng_.urange(1, 3), g.pw = resnet ? 3 : rng_.urange(1, 3);
      g.psh = resnet ? 2 : rng_.urange(1, 3), g.psw = resnet ? 2 : rng_.urange(1, 3);
      g.ppt = resnet ? 1 : rng_.urange(0, g.ph - 1), g.ppb = resnet ? 1 : rng_.urange(0, g.ph - 1);
      g.ppl = resnet ? 1 : rng_.urange(0, g.pw - 1), g.ppr = resnet ? 1 : rng_.urange(0, g.pw - 1);
      g.extra_h = rng_.chance(0.15) ? 1 : 0, g.extra_w = rng_.chance(0.15) ? 1 : 0;
    }
    const std::optional<Slice> out = b.conv(in, g);
    if (out) return b.finish("stem", in, *out, rng_.urange(1, 3));
  }
}

BitexactCase CaseGenerator::small_map_case() {
  for (;;) {
    ProgramBuilder b(rng_);
    const uint32_t in_c = rng_.chance(0.8) ? 4 * rng_.urange(1, 10) : rng_.urange(16, 36);
    const uint32_t h = rng_.pick<uint32_t>({1, 2, 3, 5, 7, 8, 9, 13, 14, 15, 16, 28, 29});
    const uint32_t w = rng_.chance(0.7) ? h : rng_.urange(1, 30);
    const Slice in = b.tensor(in_c, h, w);
    ConvChoice g = random_conv_choice(rng_, in_c);
    g.groups = 1;
    g.out_c = rng_.urange(4, 40);
    if (rng_.chance(0.5)) {  // ResNet's own: 3x3, padding 1, stride 1 or 2
      g.kh = g.kw = 3, g.dh = g.dw = 1, g.sw = g.sh;
      g.pt = g.pb = g.pl = g.pr = 1;
    }
    const std::optional<Slice> out = b.conv(in, g);
    if (out) return b.finish("small map", in, *out, rng_.urange(1, 8));
  }
}

BitexactCase CaseGenerator::depthwise_case() {
  for (;;) {
    ProgramBuilder b(rng_);
    const uint32_t h = rng_.pick<uint32_t>({1, 2, 3, 7, 9, 14, 17, 28, 31, 56, 112});
    const uint32_t w = rng_.chance(0.7) ? h : rng_.urange(1, 112);
    const uint32_t in_pg = rng_.chance(0.75) ? 1 : 2, out_pg = rng_.chance(0.6) ? 1 : rng_.urange(2, 3);
    // Many channels on small maps, few on large ones (the C simulation's cost).
    const uint32_t groups = rng_.urange(1, std::clamp(8000 / (h * w), 1u, 48u));
    const Slice in = b.tensor(groups * in_pg, h, w);
    ConvChoice g = random_conv_choice(rng_, groups * in_pg);
    g.groups = groups, g.out_c = groups * out_pg;
    const uint32_t kernel = rng_.urange(0, 5);
    g.kh = kernel == 3 ? 1 : kernel == 4 ? 5 : 3;
    g.kw = kernel == 2 ? 1 : kernel == 4 ? 5 : 3;
    g.sh = rng_.urange(1, 2), g.sw = rng_.chance(0.8) ? g.sh : rng_.urange(1, 2);
    g.dh = rng_.chance(0.8) ? 1 : 2, g.dw = rng_.chance(0.8) ? g.dh : rng_.urange(1, 2);
    const uint32_t pad = rng_.urange(0, 2);
    g.pt = std::min(pad, (g.kh - 1) * g.dh), g.pb = rng_.chance(0.8) ? g.pt : 0;
    g.pl = std::min(pad, (g.kw - 1) * g.dw), g.pr = rng_.chance(0.8) ? g.pl : 0;
    const std::optional<Slice> out = b.conv(in, g);
    if (out) return b.finish("depthwise", in, *out, rng_.urange(1, 3));
  }
}

BitexactCase CaseGenerator::pool_case() {
  for (;;) {
    ProgramBuilder b(rng_);
    const Slice in = b.tensor(rng_.urange(1, 70), rng_.urange(1, 40), rng_.urange(1, 40));
    const uint32_t kind = rng_.chance(0.5) ? abi::kPoolMax : abi::kPoolAverage;
    std::optional<Slice> out;
    if (rng_.chance(0.2) && in.h <= abi::kMaxStandalonePool && in.w <= abi::kMaxStandalonePool) {
      out = b.pool(in, kind, in.h, in.w, 1, 1, 0, 0, 0, 0, 0, 0);  // global pool
    } else {
      const uint32_t ph = rng_.chance(0.8) ? rng_.urange(1, 3) : rng_.urange(1, 16);
      const uint32_t pw = rng_.chance(0.7) ? ph : rng_.urange(1, 16);
      out = b.pool(in, kind, ph, pw, rng_.urange(1, std::min(ph, 4u)), rng_.urange(1, std::min(pw, 4u)),
                   rng_.urange(0, ph - 1), rng_.urange(0, ph - 1), rng_.urange(0, pw - 1), rng_.urange(0, pw - 1),
                   rng_.chance(0.15) ? 1 : 0, rng_.chance(0.15) ? 1 : 0);
    }
    if (out) return b.finish("pool", in, *out, rng_.urange(1, 2));
  }
}

BitexactCase CaseGenerator::add_case() {
  ProgramBuilder b(rng_);
  const uint32_t c = rng_.urange(1, 70), h = rng_.urange(1, 40), w = rng_.urange(1, 40);
  const Slice a = b.tensor(c, h, w);
  const Slice in2 = rng_.chance(0.1) ? a : b.tensor(c, h, w);              // a + a now and then
  const Slice out = rng_.chance(0.15) ? b.add(a, in2, a) : b.add(a, in2);  // in place now and then
  return b.finish("add", a, out, rng_.urange(1, 2));
}

BitexactCase CaseGenerator::network_case() {
  for (;;) {
    ProgramBuilder b(rng_);
    const Slice input = b.tensor(rng_.urange(1, 8), rng_.urange(10, 28), rng_.urange(10, 28), false);
    // Stem: 3x3/5x5/7x7 conv, "same" padding, stride 1-2, optional 2x2/2 or 3x3/2 max-pool.
    ConvChoice stem;
    stem.out_c = rng_.urange(4, 24);
    stem.kh = stem.kw = rng_.pick<uint32_t>({3, 5, 7});
    stem.sh = stem.sw = rng_.urange(1, 2);
    stem.pt = stem.pb = stem.pl = stem.pr = stem.kh / 2;
    if (rng_.chance(0.5)) {
      stem.pool = true;
      stem.ph = stem.pw = rng_.urange(2, 3);
      stem.psh = stem.psw = 2;
      stem.ppt = stem.ppb = stem.ppl = stem.ppr = stem.ph == 3 ? 1 : 0;
    }
    const std::optional<Slice> t1 = b.conv(input, stem);
    if (!t1) continue;
    // Depthwise 3x3, same size.
    ConvChoice dw;
    dw.groups = dw.out_c = t1->c;
    dw.kh = dw.kw = 3;
    dw.pt = dw.pb = dw.pl = dw.pr = 1;
    const std::optional<Slice> t2 = b.conv(*t1, dw);
    if (!t2) continue;
    // Two branches into one concat tensor: 1x1 on t2, grouped 3x3 on t1.
    const uint32_t ca = rng_.urange(1, 20), cb = 2 * rng_.urange(1, 10);
    Slice cat = b.tensor(ca + cb, t1->h, t1->w, false);
    ConvChoice pw;
    pw.out_c = ca;
    Slice left = cat, right = cat;
    left.c = ca, right.base = ca, right.c = cb;
    if (!b.conv(*t2, pw, left)) continue;
    ConvChoice g3;
    g3.groups = t1->c % 2 == 0 ? 2 : 1;
    g3.out_c = cb;
    g3.kh = g3.kw = 3;
    g3.pt = g3.pb = g3.pl = g3.pr = 1;
    if (!b.conv(*t1, g3, right)) continue;
    // Pool 3x3/1 pad 1 (max or average), then 1x1 conv and a shortcut add.
    const uint32_t kind = rng_.chance(0.5) ? abi::kPoolMax : abi::kPoolAverage;
    const std::optional<Slice> t4 = b.pool(cat, kind, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0);
    if (!t4) continue;
    ConvChoice proj;
    proj.out_c = t4->c;
    const std::optional<Slice> t5 = b.conv(*t4, proj);
    if (!t5) continue;
    // The network output has no spare channels: run() hands out every byte of it.
    const Slice out = b.add(*t4, *t5, b.tensor(t4->c, t4->h, t4->w, false));
    return b.finish("network", input, out, 3);
  }
}

}  // namespace tessera::bitexact
