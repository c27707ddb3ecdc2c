// kernel_abi.h — the one spec shared by the HLS accelerator (kernels/), the bit-exact emulator
// (accel/device/emu/) and the XRT backend (accel/device/xrt/). It fixes:
//   - the program format: a ProgramHeader followed by LayerDesc records, all 32-bit words, that
//     the kernel reads from device memory once per launch (one launch per batch);
//   - the memory layout of weights, per-channel quantisation parameters and activations;
//   - the on-chip buffer limits fixed at synthesis, which every tile must respect;
//   - the requantisation rule, as one inline function everybody calls.
// It is plain C++ with fixed-width integers only, so Vitis HLS, g++ (C simulation) and the
// host code compile the same text. Nothing here may include from accel/ or server/.
//
// Papers: convolution lowered to GEMM, computed as implicit GEMM over on-chip tiles (thesis,
// seeds/004); tiles double-buffered within half the on-chip memory (Cecconi et al., seeds/000);
// fabric runs conv/pool/eltwise, FC stays on the ARM host (NEURAghe, seeds/003).
#pragma once

#include <cstdint>

namespace tessera {
namespace abi {

// ---- Versioning -------------------------------------------------------------------------------

// "TSR1" little-endian; a program with another magic or version is refused by every backend.
constexpr uint32_t kProgramMagic = 0x31525354u;
// 2: LayerDesc.loop_order (input-stationary convolutions). 3: LayerDesc.fold_rows (the whole
// kernel window folded into the MAC vector, input rows at a padded pitch) and add chunks of up to
// 32 KiB (kAddChunkBytes, was 4 KiB).
constexpr uint32_t kAbiVersion = 3;

// ---- Element types ----------------------------------------------------------------------------
// Activations and weights are int8, symmetric (zero point 0). Accumulators, biases and
// requantisation multipliers are int32; intermediates of the requantisation are int64.
using act_t = int8_t;
using weight_t = int8_t;
using acc_t = int32_t;

// ---- On-chip limits (fixed at synthesis) --------------------------------------------------------
// Tile sizes: T_m output channels, T_n input channels per group, T_r x T_c output pixels of the layer's
// final output (after a fused pool). The planner picks tiles within these limits and within the
// buffer budgets below; the kernel and emulator refuse a descriptor that exceeds them.
constexpr uint32_t kMaxTileM = 64;    // output channels per tile (parallel MAC lanes)
constexpr uint32_t kMaxVector = 64;   // MAC vector per lane and tap: input channels (x kernel width, folded)
constexpr uint32_t kMaxTileN = 1024;  // input channels per tile: the vector walks them 64 at a time
constexpr uint32_t kMaxTileR = 256;   // output rows per tile (the buffer budgets bind first)
constexpr uint32_t kMaxTileC = 256;   // output columns per tile: whole rows of 112- and 224-wide layers
constexpr uint32_t kMaxKernel = 11;   // kernel height/width
constexpr uint32_t kMaxStride = 4;
constexpr uint32_t kMaxDilation = 4;
constexpr uint32_t kMaxPoolKernel = 3;       // fused max-pool window (2x2 or 3x3)
constexpr uint32_t kMaxStandalonePool = 16;  // standalone pool window (incl. global pool up to 16x16)
// Element-wise add (kOpAdd): one chunk of tile_r x tile_c elements of each operand on chip, both
// operands in one half of the conv engine's input tile pair, the result in a staging tile.
constexpr uint32_t kAddChunkBytes = 32768;

// One buffer of each double-buffered pair, in bytes. Input tile: T_n x in_rows x in_cols int8;
// weight tile: T_m x T_n x kh x kw int8; output tile: T_m x conv_rows x conv_cols int32
// accumulators. All three are double-buffered (load, compute and store run concurrently), so the
// on-chip total is 2 x (input + weight + output).
constexpr uint32_t kInputBufferBytes = 64 * 1024;
constexpr uint32_t kWeightBufferBytes = 64 * 1024;
constexpr uint32_t kOutputBufferBytes = 256 * 1024;
static_assert(2 * kAddChunkBytes <= kInputBufferBytes, "an add's two operand chunks share one input tile");

// Input tile rows/cols of the implicit-GEMM window (the static array bounds of the HLS kernel).
constexpr uint32_t kMaxInputTileRows = 256;
constexpr uint32_t kMaxInputTileCols = 256;

// The m_axi data width of the weight and arena ports: 512 bits, one 64-byte beat per cycle. The
// on-chip input, weight and output-staging buffers are split into as many banks (one byte each
// per cycle), so a beat lands in, and a pixel's 64 channels leave, the buffer in one cycle.
constexpr uint32_t kBeatBytes = 64;
constexpr uint32_t kBanks = 64;

// ---- Requantisation -----------------------------------------------------------------------------
// y = clamp((acc * M + (1 << (S - 1))) >> S, lo, hi), acc = int32 sum + int32 bias, M a positive
// int32 multiplier, S in [kMinShift, kMaxShift], 64-bit intermediate, arithmetic shift.
// The int32 sum of products and the bias add wrap modulo 2^32 (two's complement), like the
// hardware adders, so every summation order and tiling gives the same acc.
// lo = 0 when ReLU is fused, else -128; hi = 127, or a smaller bound for a fused ReLU6-style
// clip (carried in the descriptor's act_lo / act_hi).
constexpr int32_t kMinShift = 1;
constexpr int32_t kMaxShift = 62;

inline int32_t requantize(int32_t acc, int32_t multiplier, int32_t shift, int32_t lo, int32_t hi) {
  const int64_t product = static_cast<int64_t>(acc) * static_cast<int64_t>(multiplier);
  const int64_t rounded = (product + (static_cast<int64_t>(1) << (shift - 1))) >> shift;
  return rounded < lo ? lo : (rounded > hi ? hi : static_cast<int32_t>(rounded));
}

// Element-wise add of two int8 tensors with their own scales, rescaled to the output's:
// y = clamp((a * M_a + b * M_b + (1 << (S - 1))) >> S, lo, hi), 64-bit intermediate.
inline int32_t requantize_add(int32_t a, int32_t b, int32_t multiplier_a, int32_t multiplier_b, int32_t shift,
                              int32_t lo, int32_t hi) {
  const int64_t sum = static_cast<int64_t>(a) * multiplier_a + static_cast<int64_t>(b) * multiplier_b;
  const int64_t rounded = (sum + (static_cast<int64_t>(1) << (shift - 1))) >> shift;
  return rounded < lo ? lo : (rounded > hi ? hi : static_cast<int32_t>(rounded));
}

// ---- Operations ---------------------------------------------------------------------------------
enum LayerOp : uint32_t {
  kOpConv = 1,  // (grouped) convolution + bias + requantise + clamp [+ fused max-pool]
  kOpPool = 2,  // standalone max or average pool on int8 (average: window sum, then requantise)
  kOpAdd = 3,   // element-wise add of two int8 tensors (ResNet/MobileNet shortcuts)
};

// Order a convolution's tiles are visited in (kOpConv only; pool and add layers take 0).
enum LoopOrder : uint32_t {
  // (m, r, c, k), k fastest: each output tile accumulates over its input-channel slices, and the
  // input tile of a spatial position is loaded again for every output-channel tile.
  kLoopOutputStationary = 0,
  // (r, c, m): one input tile (all the layer's input channels, tile_n >= in_c, ungrouped) stays
  // on chip while every output-channel tile of its position is computed from it; only the weights
  // are loaded per step (TSO's input-stationary schedule, seeds/002 eq. 3, without partial sums).
  kLoopInputStationary = 1,
};

enum PoolKind : uint32_t {
  kPoolNone = 0,
  // Max over the window's valid positions, starting from -128: padded positions never win and a
  // window with no valid position gives -128. No requantisation and no act_lo/act_hi clamp
  // (a fused pool's inputs are already requantised and clamped).
  kPoolMax = 1,
  // kOpPool only: requantize(sum over valid positions, M, S, act_lo, act_hi); the window count is
  // constant (no padding, or count_include_pad), its reciprocal folded into M / 2^S.
  kPoolAverage = 2,
};

// ---- Memory layout ------------------------------------------------------------------------------
// Four data buffers, bound to the kernel's first four m_axi ports (the fifth, status, is below):
//   program  (uint32): ProgramHeader, then layer_count LayerDesc records.
//   weights  (int8):   per conv layer, [out_c][in_c / groups][kernel_h][kernel_w], at weight_offset
//                      (bytes). Offsets are multiples of kParamAlignBytes.
//   quant    (int32):  per conv layer, three arrays of out_c values at quant_offset (in int32
//                      words): bias[out_c], multiplier[out_c], shift[out_c]. Per pool/add layer:
//                      {multiplier, shift} (average pool) or {multiplier_a, multiplier_b, shift}.
//   arena    (int8):   activations. Image n's activations start at n * header.arena_image_bytes;
//                      within an image a tensor is C x H x W at its byte offset. A layer may read
//                      and write a channel slice of a larger tensor (channel_base / channels_total),
//                      which makes Concat free: producers write into their slice of one tensor.
constexpr uint32_t kParamAlignBytes = 64;  // DDR burst alignment for weight/quant arrays
constexpr uint32_t kArenaAlignBytes = 64;  // alignment of every activation tensor

// 32-bit words so that HLS reads the record with plain word loads and host code needs no packing.
struct ProgramHeader {
  uint32_t magic;    // kProgramMagic
  uint32_t version;  // kAbiVersion
  uint32_t layer_count;
  uint32_t batch;              // images in this launch (set per run by the host)
  uint32_t arena_image_bytes;  // arena bytes per image
  uint32_t input_offset;       // network input tensor (C x H x W int8) in the image's arena
  uint32_t output_offset;      // network output tensor of the fabric part
  uint32_t reserved[9];
};

struct LayerDesc {
  uint32_t op;  // LayerOp
  // Input tensor (C x H x W int8 at in_offset; reads channels [in_channel_base, +in_c) of a
  // tensor with in_channels_total channels).
  uint32_t in_c, in_h, in_w;
  uint32_t in_offset;
  uint32_t in_channel_base, in_channels_total;
  // Second input of kOpAdd (same shape and slicing rule as the first).
  uint32_t in2_offset;
  uint32_t in2_channel_base, in2_channels_total;
  // Output tensor after any fused pool: out_c x out_h x out_w, written into channels
  // [out_channel_base, +out_c) of a tensor with out_channels_total channels at out_offset.
  uint32_t out_c, out_h, out_w;
  uint32_t out_offset;
  uint32_t out_channel_base, out_channels_total;
  // Convolution (kOpConv): output before the fused pool is out_c x conv_h x conv_w.
  uint32_t conv_h, conv_w;
  uint32_t kernel_h, kernel_w;
  uint32_t stride_h, stride_w;
  uint32_t pad_top, pad_left;  // bottom/right padding is implied by conv_h/conv_w
  uint32_t dilation_h, dilation_w;
  uint32_t groups;
  uint32_t weight_offset;  // bytes into the weights buffer
  uint32_t quant_offset;   // int32 words into the quant buffer
  // Clamp after requantisation (two's complement in the low 8 bits is NOT used: full int32).
  int32_t act_lo, act_hi;
  // Pool: fused after the conv (kOpConv, kPoolMax only) or the whole op (kOpPool). Windows are
  // in the pool's input coordinates; padded positions never win a max and are never counted.
  uint32_t pool_kind;  // PoolKind
  uint32_t pool_h, pool_w;
  uint32_t pool_stride_h, pool_stride_w;
  uint32_t pool_pad_top, pool_pad_left;
  // Tiles (planner's choice): output channels, input channels (per group), output rows, cols.
  uint32_t tile_m, tile_n, tile_r, tile_c;
  uint32_t loop_order;  // LoopOrder
  // 1: the kernel window (kernel_h x kernel_w) folded into the MAC vector, (channel, ky, kx)
  // triples, one tap unit per step (kOpConv, groups 1, no dilation, tile_n x kernel_h x kernel_w
  // <= kMaxVector); the input tile's rows sit at a pitch = kernel_w (mod kBanks), so a pixel's
  // window lies in distinct banks (schedule::input_pitch). 0: channels (or (channel, kx) pairs).
  uint32_t fold_rows;
  uint32_t reserved[2];
};

constexpr uint32_t kHeaderWords = sizeof(ProgramHeader) / 4;
constexpr uint32_t kLayerWords = sizeof(LayerDesc) / 4;
static_assert(sizeof(ProgramHeader) == 64, "ProgramHeader is 16 words");
static_assert(sizeof(LayerDesc) % 4 == 0, "LayerDesc is whole words");

// The kernel's verdict on a launch, written to word 0 of the status buffer (the fifth m_axi
// port); word 1 holds the index of the offending layer for kRunBadLayer. Backends turn a
// non-zero status into an error naming the layer, never into silently wrong numbers.
enum RunStatus : uint32_t {
  kRunOk = 0,
  kRunBadProgram = 1,  // magic/version mismatch or layer_count over kMaxLayers
  kRunBadLayer = 2,    // a descriptor exceeds the synthesised limits
};
constexpr uint32_t kStatusWords = 2;
constexpr uint32_t kMaxLayers = 1024;

namespace schedule {
// Pitch of an input tile row in the banked buffer: the row's width (whole tensor rows or the
// tile's columns), or, with the kernel window folded (LayerDesc.fold_rows), the next width = kernel_w
// (mod kBanks): then element (ch, ky, kx) of a pixel's vector sits in bank base + ch x kh x kw +
// ky x kw + kx (channel skew kernel_h x kernel_w), all distinct.
inline uint32_t input_pitch(uint32_t width, bool fold_rows, uint32_t kernel_w) {
  return fold_rows ? width + (kernel_w + kBanks - width % kBanks) % kBanks : width;
}
}  // namespace schedule

// Checks one descriptor against the synthesised limits (tile sizes, kernel, stride, buffer
// budgets). The kernel, the emulator and the program compiler all call it: a layer one of them
// accepts, all accept.
inline bool layer_fits(const LayerDesc& d) {
  if (d.op != kOpConv && d.op != kOpPool && d.op != kOpAdd) return false;
  if (d.tile_m < 1 || d.tile_m > kMaxTileM || d.tile_r < 1 || d.tile_r > kMaxTileR || d.tile_c < 1 ||
      d.tile_c > kMaxTileC)
    return false;
  // A layer without channels is no layer (and a conv's per-group counts would divide by zero).
  if (d.out_c < 1 || (d.op == kOpConv && d.in_c < 1)) return false;
  if (d.out_channel_base + d.out_c > d.out_channels_total) return false;
  if (d.in_channel_base + d.in_c > d.in_channels_total) return false;
  // Clamp bounds are stored as int8: anything wider would wrap on the write.
  if (d.act_lo < -128 || d.act_hi > 127 || d.act_lo > d.act_hi) return false;
  if (d.loop_order != kLoopOutputStationary &&
      (d.op != kOpConv || d.loop_order != kLoopInputStationary || d.groups != 1 || d.tile_n < d.in_c))
    return false;
  if (d.fold_rows > 1 ||
      (d.fold_rows == 1 && !(d.op == kOpConv && d.groups == 1 && d.kernel_h > 1 && d.dilation_h == 1 &&
                             d.dilation_w == 1 && d.tile_n * d.kernel_h * d.kernel_w <= kMaxVector)))
    return false;
  if (d.op == kOpAdd) {
    return d.in2_channel_base + d.in_c <= d.in2_channels_total &&
           static_cast<uint64_t>(d.tile_r) * d.tile_c <= kAddChunkBytes;
  }
  if (d.op == kOpPool) {
    if ((d.pool_kind != kPoolMax && d.pool_kind != kPoolAverage) || d.pool_h < 1 || d.pool_h > kMaxStandalonePool ||
        d.pool_w < 1 || d.pool_w > kMaxStandalonePool || d.pool_stride_h < 1 || d.pool_stride_w < 1)
      return false;
    // The tile's input window in the conv engine's banked input tile (kernels/accel_pool.h), its
    // results in the staging tile.
    const uint32_t in_rows = (d.tile_r - 1) * d.pool_stride_h + d.pool_h;
    const uint32_t in_cols = (d.tile_c - 1) * d.pool_stride_w + d.pool_w;
    if (in_rows > kMaxInputTileRows || in_cols > kMaxInputTileCols) return false;
    const uint64_t pitch = d.tile_c >= d.out_w ? d.in_w : in_cols;
    return static_cast<uint64_t>(d.tile_m) * ((in_rows * pitch + kBanks - 1) / kBanks) * kBanks <= kInputBufferBytes &&
           static_cast<uint64_t>(d.tile_m) * d.tile_r * d.tile_c * 4 <= kOutputBufferBytes;
  }
  // Convolution.
  if (d.groups < 1 || d.in_c % d.groups != 0 || d.out_c % d.groups != 0) return false;
  // Grouped/depthwise: a channel tile covers whole groups or lies inside one group, so the
  // input tile holds groups_in_tile x tile_n channels.
  const uint32_t out_per_group = d.out_c / d.groups;
  const uint32_t in_per_group = d.in_c / d.groups;
  if (d.groups > 1 && out_per_group % d.tile_m != 0 && d.tile_m % out_per_group != 0) return false;
  const uint32_t groups_in_tile = d.tile_m > out_per_group ? d.tile_m / out_per_group : 1;
  if (d.tile_n < 1 || d.tile_n > kMaxTileN || d.tile_n > in_per_group) return false;
  // A tile spanning several groups puts all their channels in one MAC vector.
  if (groups_in_tile > 1 && groups_in_tile * d.tile_n > kMaxVector) return false;
  if (d.kernel_h < 1 || d.kernel_h > kMaxKernel || d.kernel_w < 1 || d.kernel_w > kMaxKernel) return false;
  if (d.stride_h < 1 || d.stride_h > kMaxStride || d.stride_w < 1 || d.stride_w > kMaxStride) return false;
  if (d.dilation_h < 1 || d.dilation_h > kMaxDilation || d.dilation_w < 1 || d.dilation_w > kMaxDilation) return false;
  if (d.pool_kind != kPoolNone && d.pool_kind != kPoolMax) return false;
  if (d.pool_kind == kPoolMax && (d.pool_h < 1 || d.pool_h > kMaxPoolKernel || d.pool_w < 1 ||
                                  d.pool_w > kMaxPoolKernel || d.pool_stride_h < 1 || d.pool_stride_w < 1))
    return false;
  // Conv rows/cols a tile of tile_r x tile_c outputs needs (through the fused pool, if any).
  const uint32_t conv_rows = d.pool_kind == kPoolMax ? (d.tile_r - 1) * d.pool_stride_h + d.pool_h : d.tile_r;
  const uint32_t conv_cols = d.pool_kind == kPoolMax ? (d.tile_c - 1) * d.pool_stride_w + d.pool_w : d.tile_c;
  const uint32_t in_rows = (conv_rows - 1) * d.stride_h + (d.kernel_h - 1) * d.dilation_h + 1;
  const uint32_t in_cols = (conv_cols - 1) * d.stride_w + (d.kernel_w - 1) * d.dilation_w + 1;
  if (in_rows > kMaxInputTileRows || in_cols > kMaxInputTileCols) return false;
  // The banked buffers hold each tile channel (input) and each lane (weights) in whole rows of
  // kBanks bytes: see input_channel_rows() and weight_lane_rows().
  const bool whole_rows = d.tile_c >= d.out_w;
  const uint64_t in_pitch = schedule::input_pitch(whole_rows ? d.in_w : in_cols, d.fold_rows == 1, d.kernel_w);
  if (static_cast<uint64_t>(groups_in_tile) * d.tile_n * ((in_rows * in_pitch + kBanks - 1) / kBanks) * kBanks >
      kInputBufferBytes)
    return false;
  if (static_cast<uint64_t>(d.tile_m) * ((d.tile_n * d.kernel_h * d.kernel_w + kBanks - 1) / kBanks) * kBanks >
      kWeightBufferBytes)
    return false;
  if (static_cast<uint64_t>(d.tile_m) * conv_rows * conv_cols * 4 > kOutputBufferBytes) return false;
  return true;
}

// The conv engine's schedule as its pragmas declare it, shared by the cycle-accounting C-sim
// (kernels/accel_count.h) and the planner's cost model (accel/plan/cost_model.cc). Pipeline depths
// are assumptions (no HLS report exists yet): cycles from a loop entry's first issue to its last
// result, paid once per loop entry on top of iterations x II.
namespace schedule {
constexpr uint32_t kWeightStageDepth = 4;  // w_stage: bank read (2) + crossbar + register write
// conv_pixels: address (1) + bank read (2) + crossbar (1) + DSP multiply (3) + adder tree (6) +
// accumulator read-modify-write (2).
constexpr uint32_t kConvPixelDepth = 15;
constexpr uint32_t kQuantReadDepth = 12;  // q_read: AXI read latency of the burst head
// st_requant: accumulator read (2) + 32x32 multiply (6) + round/shift/clamp (4) + row max (1) + line
// buffer read (1) + column max (1) + bank write (1)
constexpr uint32_t kRequantDepth = 16;
constexpr uint32_t kStoreDepth = 6;  // st_beats: bank read (2) + crossbar (1) + AXI write issue (3)
// pool_pixels: bank read (2) + crossbar (1) + max/add (1) + requantise (average: 10) + bank write (1)
constexpr uint32_t kPoolDepth = 15;
// add_lanes: two int8 x int32 products (4) + sum, round, shift, clamp (4)
constexpr uint32_t kAddDepth = 8;
// Elements per cycle of the add (kernels/accel_add.h): the default of TESSERA_ADD_LANES and of a
// board profile's add_lanes; at most kMaxAddLanes, where a lane group's operand-a and operand-b
// bytes (b rotated by kBanks / 2) stop sharing no bank and the two 512-bit reads per 64 elements
// bind anyway.
constexpr uint32_t kAddLanes = 16;
constexpr uint32_t kMaxAddLanes = 32;
constexpr uint32_t kLoadDepth = 12;  // in_beats / w_beats: AXI read latency of the burst head

// Initiation interval of conv_pixels: the kMaxTileM lanes folded onto the synthesised lanes. Each
// iteration is one (pixel, chunk of `channels` input channels); a pixel takes vector_chunks().
constexpr uint32_t conv_pixel_ii(uint32_t lanes) { return kMaxTileM / lanes; }

// Few-channel mapping: when a tile's channels times the kernel width fit one MAC vector, the
// kernel width is folded into it (im2col along x: the vector is (channel, kx) pairs, the tap loop
// runs over kernel rows only). Plain (ungrouped) convs without horizontal dilation.
inline bool folds_kernel_width(uint32_t groups, uint32_t tile_n, uint32_t kernel_w, uint32_t dilation_w) {
  return groups == 1 && kernel_w > 1 && dilation_w == 1 && tile_n * kernel_w <= kMaxVector;
}

// Depthwise mapping: a conv with one input and one output channel per group (and no horizontal
// dilation) runs lane m on the tile's channel m, the MAC vector along the kernel row: each lane
// keeps the last kernel_w input columns of its channel in a shift register, one new column per
// cycle for all lanes (64 distinct banks), so a tap row costs (conv_cols - 1) x stride_w +
// kernel_w cycles per conv row, kernel_w MACs per lane and cycle.
inline bool depthwise_lanes(uint32_t in_c, uint32_t out_c, uint32_t groups, uint32_t dilation_w) {
  return groups > 1 && in_c == groups && out_c == groups && dilation_w == 1;
}
// Input columns one conv row of a depthwise tap row reads (the cycles of that row).
inline uint32_t depthwise_span(uint32_t conv_cols, uint32_t stride_w, uint32_t kernel_w) {
  return (conv_cols - 1) * stride_w + kernel_w;
}

// Pixel spreading: a 1x1 stride-1 ungrouped conv whose tile has at most kMaxTileM / 2 output
// channels and reads its conv pixels in order (buffer pitch = conv columns, so pixel p + 32 sits 32
// banks past pixel p) computes two conv pixels per iteration: in each block of kBanks pixels, p and
// p + kBanks / 2, lanes m and m + kMaxTileM / 2 computing output channel m of either, on chunks of
// spread_channels() elements (the two pixels' chunks sit in 64 distinct banks). The kernel chooses
// it per step from the descriptor (no ABI field).
// A spread step keeps pixel p's accumulators at p x accumulator_stride() + m with an odd stride, so
// the two pixels of a pair (32 x stride apart) land in different banks of the accumulator tile
// (cyclic by lanes); it spreads only where that fits the tile (pixels = the step's conv pixels).
inline uint32_t accumulator_stride(bool spread, uint32_t m_count) { return spread ? m_count | 1 : m_count; }
inline bool spreads_pixels(uint32_t groups, uint32_t kernel_h, uint32_t kernel_w, uint32_t stride_h, uint32_t stride_w,
                           uint32_t m_count, uint32_t pitch, uint32_t conv_cols, uint32_t pixels) {
  return groups == 1 && kernel_h == 1 && kernel_w == 1 && stride_h == 1 && stride_w == 1 && m_count <= kMaxTileM / 2 &&
         pitch == conv_cols &&
         static_cast<uint64_t>(accumulator_stride(true, m_count)) * pixels * 4 <= kOutputBufferBytes;
}
// Elements of a chunk in spread mode: two pixels' chunks share the kBanks banks.
constexpr uint32_t spread_channels(uint32_t mac_channels) {
  return mac_channels < kBanks / 2 ? mac_channels : kBanks / 2;
}
// Iterations of the pixel pairs of `pixels` conv pixels (blocks of kBanks, the last one partial).
inline uint32_t spread_pairs(uint32_t pixels) {
  const uint32_t rest = pixels % kBanks;
  return pixels / kBanks * (kBanks / 2) + (rest < kBanks / 2 ? rest : kBanks / 2);
}

// Vector groups of a tap: a tile's channels beyond kMaxVector take further passes of the pixel
// loop, kMaxVector channels each (the last one shorter). Elements of the MAC vector of a tap (or
// of its group) and the chunks the array folds it into.
// `per_channel`: elements per channel, 1 (channels), kernel_w (folds_kernel_width) or kernel_h x
// kernel_w (LayerDesc.fold_rows).
inline uint32_t vector_length(uint32_t per_channel, uint32_t tile_channels) { return tile_channels * per_channel; }
inline uint32_t vector_per_channel(bool fold_rows, bool fold, uint32_t kernel_h, uint32_t kernel_w) {
  return fold_rows ? kernel_h * kernel_w : (fold ? kernel_w : 1);
}
inline uint32_t vector_chunks(uint32_t length, uint32_t channels) { return (length + channels - 1) / channels; }

// Passes of the weight staging per lane: a lane's weights sit in the weight buffer in DDR order
// (n x kh x kw) over kBanks banks, and one staging read takes at most one element per bank. A
// tap's vector reads elements n * taps + t (stride taps); a folded kernel row reads
// n * taps + ky * kw + kx; a folded window (per_channel = taps) reads them all, consecutively.
// Passes = the largest number of elements in one bank (1 for odd taps).
inline uint32_t stage_passes(uint32_t per_channel, uint32_t n, uint32_t kernel_h, uint32_t kernel_w) {
  uint32_t hits[kBanks] = {};
  uint32_t most = 0;
  const uint32_t taps = kernel_h * kernel_w, width = per_channel;
  for (uint32_t c = 0; c < n; ++c) {
    for (uint32_t x = 0; x < width; ++x) {
      const uint32_t bank = (c * taps + x) % kBanks;
      if (++hits[bank] > most) most = hits[bank];
    }
  }
  return most;
}

// Beats a run of `bytes` starting at byte address `addr` takes on a kBeatBytes-wide port.
inline uint32_t run_beats(uint64_t addr, uint32_t bytes) {
  return bytes == 0 ? 0 : static_cast<uint32_t>((addr % kBeatBytes + bytes + kBeatBytes - 1) / kBeatBytes);
}
}  // namespace schedule

}  // namespace abi
}  // namespace tessera
