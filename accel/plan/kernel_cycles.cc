#include "accel/plan/kernel_cycles.h"

#include <algorithm>
#include <initializer_list>
#include <numeric>
#include <vector>

#include "kernels/kernel_abi.h"

namespace tessera::plan {
namespace {

namespace sch = abi::schedule;

// A dimension cut into tiles: `count` tiles of extent `size` (the full ones, then the last).
struct Extent {
  uint32_t size;
  uint64_t count;
};

std::vector<Extent> extents(uint32_t total, uint32_t tile) {
  std::vector<Extent> e;
  if (total / tile > 0) e.push_back({tile, total / tile});
  if (total % tile > 0) e.push_back({total % tile, 1});
  return e;
}

// Mean beats of a run of `len` bytes whose start address is a multiple of `g` (a divisor of 64)
// and otherwise spread evenly over the 64 / g alignments: with len = q g + s, (len + 64 - g) / 64
// when s = 0, else (len - s) / 64 + 1 (exact for g = 64).
double beats(double len, uint64_t g) {
  if (len <= 0) return 0;
  const uint64_t l = static_cast<uint64_t>(len), s = l % g;
  return s == 0 ? static_cast<double>(l + abi::kBeatBytes - g) / abi::kBeatBytes
                : static_cast<double>(l - s) / abi::kBeatBytes + 1;
}

uint64_t align_of(std::initializer_list<uint64_t> strides) {
  uint64_t g = abi::kBeatBytes;
  for (uint64_t x : strides) g = std::gcd(g, x);
  return g;
}

// The valid (in-tensor) input rows or columns behind output tile [o0, o0 + count) of a dimension.
uint32_t valid_inputs(uint32_t o0, uint32_t count, uint32_t pool_stride, uint32_t pool_pad, uint32_t pool, bool pooled,
                      uint32_t stride, uint32_t pad, uint32_t kernel, uint32_t dilation, uint32_t in) {
  const int64_t conv0 = static_cast<int64_t>(o0) * pool_stride - pool_pad;
  const int64_t convs = pooled ? static_cast<int64_t>(count - 1) * pool_stride + pool : count;
  const int64_t in0 = conv0 * stride - pad;
  const int64_t span = (convs - 1) * stride + static_cast<int64_t>(kernel - 1) * dilation + 1;
  const int64_t lo = std::max<int64_t>(in0, 0), hi = std::min<int64_t>(in0 + span, in);
  return hi > lo ? static_cast<uint32_t>(hi - lo) : 0;
}

// The tiled layer as the kernel walks it (accel_conv_geom.h make_conv_step).
struct KernelTiling {
  const ConvGeometry& g;
  const BoardProfile& b;
  TileShape t;
  bool fold, whole_rows;
  uint32_t taps, tap_rows;
  uint32_t per_channel = 1;  // vector elements per channel: 1, kernel_w (fold) or taps (t.fold_rows)
  std::vector<Extent> ms, ns, rs, cs;
  // Input stationary (abi::kLoopInputStationary): each spatial tile's input loaded once, not per m-tile.
  bool input_once = false;
  // Depthwise mapping (abi::schedule::depthwise_lanes): lane per channel, vector along the kernel row.
  bool depthwise = false;
};

uint32_t tile_channels(const KernelTiling& k, uint32_t m, uint32_t n) {
  const uint32_t opg = k.g.out_per_group();
  return (k.t.m >= opg ? m / opg : 1) * n;
}

// Compute half of one step (accel_conv.h compute_conv_tile): staging of the first unit, then per
// unit (tap row x vector group of at most kMaxVector elements, the last group shorter) the pixel
// loop beside the next unit's staging.
double step_compute(const KernelTiling& k, uint32_t m, uint32_t n, uint64_t pixels, bool spread) {
  const uint32_t vec = sch::vector_length(k.per_channel, k.per_channel > 1 ? n : tile_channels(k, m, n));
  const uint32_t channels = spread ? sch::spread_channels(k.b.mac_channels) : k.b.mac_channels;
  const double iterations = spread ? sch::spread_pairs(static_cast<uint32_t>(pixels)) : static_cast<double>(pixels);
  const uint32_t groups = static_cast<uint32_t>(ceil_div(vec, abi::kMaxVector));
  const uint32_t last = vec - (groups - 1) * abi::kMaxVector;
  const double stage = static_cast<double>(abi::kMaxTileM) *
                           sch::stage_passes(k.per_channel, std::min(n, abi::kMaxVector), k.g.kernel_h, k.g.kernel_w) +
                       sch::kWeightStageDepth;
  const auto mac = [&](uint32_t len) {
    return iterations * sch::vector_chunks(len, channels) * sch::conv_pixel_ii(k.b.mac_lanes) + sch::kConvPixelDepth;
  };
  const double units = static_cast<double>(k.tap_rows) * groups;
  const double last_units = k.tap_rows - 1;  // last-group units before the final one
  const double full_units = units - 1 - last_units;
  return stage + full_units * std::max(mac(abi::kMaxVector), stage) + last_units * std::max(mac(last), stage) +
         mac(last);
}

// Compute half of one depthwise step (accel_conv.h compute_dw_tile): the first row's staging,
// then per kernel row the pixel loop (one input column per cycle) beside the next row's staging.
double step_compute_dw(const KernelTiling& k, uint32_t conv_rows, uint32_t conv_cols) {
  const double stage = static_cast<double>(abi::kMaxTileM) + sch::kWeightStageDepth;
  const double mac = static_cast<double>(conv_rows) * sch::depthwise_span(conv_cols, k.g.stride_w, k.g.kernel_w) *
                         sch::conv_pixel_ii(k.b.mac_lanes) +
                     sch::kConvPixelDepth;
  return stage + (k.g.kernel_h - 1) * std::max(mac, stage) + mac;
}

// Whether the kernel spreads pixels over idle lanes in a step of m filters and `cols` conv
// columns (abi::schedule::spreads_pixels: for a 1x1 stride-1 conv the buffer pitch is the tile's
// conv columns unless whole input rows are wider).
bool spreads(const KernelTiling& k, uint32_t m, uint32_t rows, uint32_t cols) {
  const ConvGeometry& g = k.g;
  const uint32_t pitch = k.whole_rows ? g.in_w : cols;
  return sch::spreads_pixels(g.groups, g.kernel_h, g.kernel_w, g.stride_h, g.stride_w, m, pitch, cols, rows * cols);
}

double compute_half(const KernelTiling& k) {
  const ConvGeometry& g = k.g;
  double total = 0;
  for (const Extent& m : k.ms)
    for (const Extent& n : k.ns)
      for (const Extent& r : k.rs)
        for (const Extent& c : k.cs) {
          const uint32_t rows = g.conv_rows(r.size), cols = g.conv_cols(c.size);
          const double step = k.depthwise ? step_compute_dw(k, rows, cols)
                                          : step_compute(k, m.size, n.size, static_cast<uint64_t>(rows) * cols,
                                                         spreads(k, m.size, rows, cols));
          total += static_cast<double>(m.count * n.count * r.count * c.count) * step;
        }
  return total;
}

// Load half (accel_conv_load.h): per step, every tile channel's runs' beats in one loop + the
// read latency once (nothing for a tile wholly in the padding), and all lanes' weight runs in one
// loop.
double load_half(const KernelTiling& k, uint32_t slice_r, bool with_weights = true) {
  const ConvGeometry& g = k.g;
  const TileShape& t = k.t;
  const double depth = sch::kLoadDepth;
  // Input, per (row tile, column tile): sum of beats and of loop entries per channel.
  double rows_sum = 0, row_tiles = 0, cols_beats = 0, col_tiles = 0;
  for (uint32_t r0 = 0; r0 < slice_r; r0 += t.r) {
    const uint32_t v = valid_inputs(r0, std::min(t.r, slice_r - r0), g.pool_stride_h, g.pool_pad_top, g.pool_h,
                                    g.pooled, g.stride_h, g.pad_top, g.kernel_h, g.dilation_h, g.in_h);
    rows_sum += v;
    row_tiles += v > 0;
  }
  const uint64_t plane = static_cast<uint64_t>(g.in_h) * g.in_w;
  double whole_beats = 0;
  if (k.whole_rows && k.t.fold_rows) {  // rows at a padded pitch: one run per row
    const uint64_t a = align_of({plane, g.in_w});
    whole_beats = rows_sum * beats(g.in_w, a);
  } else if (k.whole_rows) {
    const uint64_t a = align_of({plane, g.in_w});
    for (uint32_t r0 = 0; r0 < slice_r; r0 += t.r) {
      const uint32_t v = valid_inputs(r0, std::min(t.r, slice_r - r0), g.pool_stride_h, g.pool_pad_top, g.pool_h,
                                      g.pooled, g.stride_h, g.pad_top, g.kernel_h, g.dilation_h, g.in_h);
      whole_beats += beats(static_cast<double>(v) * g.in_w, a);
    }
  } else {
    for (uint32_t c0 = 0; c0 < g.out_w; c0 += t.c) {
      const uint32_t v = valid_inputs(c0, std::min(t.c, g.out_w - c0), g.pool_stride_w, g.pool_pad_left, g.pool_w,
                                      g.pooled, g.stride_w, g.pad_left, g.kernel_w, g.dilation_w, g.in_w);
      const int64_t x0 = (static_cast<int64_t>(c0) * g.pool_stride_w - g.pool_pad_left) * g.stride_w - g.pad_left;
      cols_beats += beats(v, align_of({plane, g.in_w, static_cast<uint64_t>(std::max<int64_t>(x0, 0))}));
      col_tiles += v > 0;
    }
  }
  // Per channel, summed over the spatial tiles: its beats; per step: the loop entries (spatial
  // tiles with a valid input) x the read latency.
  const double channel_beats = k.whole_rows ? whole_beats : rows_sum * cols_beats;
  const double entries_latency = (k.whole_rows ? row_tiles : row_tiles * col_tiles) * depth;
  // Weights: a lane's run of n x taps bytes at ((m0 + m) N + k0) taps past weight_offset (a
  // multiple of 64).
  const uint64_t w_align =
      align_of({static_cast<uint64_t>(g.in_per_group()) * k.taps, static_cast<uint64_t>(t.n) * k.taps});
  const double spatial = static_cast<double>(ceil_div(slice_r, t.r) * ceil_div(g.out_w, t.c));
  double input = 0, weights = 0;
  for (const Extent& m : k.ms)
    for (const Extent& n : k.ns) {
      const double steps = static_cast<double>(m.count * n.count);
      if (!k.input_once) input += steps * (tile_channels(k, m.size, n.size) * channel_beats + entries_latency);
      if (with_weights)
        weights += steps * spatial * (m.size * beats(static_cast<double>(n.size) * k.taps, w_align) + depth);
    }
  if (k.input_once) input = static_cast<double>(g.in_c) * channel_beats + entries_latency;
  return input + weights;
}

// Store half (accel_conv_store.h), per output tile: three quant runs, one conv pixel per cycle
// (the fused pool is separable); write half (write_conv_tile): the lanes' write runs in one loop.
struct StoreWrite {
  double store = 0, write = 0;
};

StoreWrite store_half(const KernelTiling& k) {
  const ConvGeometry& g = k.g;
  const uint64_t q_align = align_of({4ull * k.t.m, 4ull * g.out_c});
  const uint64_t out_plane = static_cast<uint64_t>(g.out_h) * g.out_w;
  StoreWrite total;
  for (const Extent& m : k.ms)
    for (const Extent& r : k.rs)
      for (const Extent& c : k.cs) {
        const double quant = 3 * (beats(4.0 * m.size, q_align) + sch::kQuantReadDepth);
        const double requant =
            static_cast<double>(g.conv_rows(r.size)) * g.conv_cols(c.size) + sch::kRequantDepth;  // separable pool
        const double out = k.whole_rows ? beats(static_cast<double>(r.size) * g.out_w,
                                                align_of({out_plane, static_cast<uint64_t>(k.t.r) * g.out_w}))
                                        : r.size * beats(c.size, align_of({out_plane, g.out_w, k.t.c}));
        const double tiles = static_cast<double>(m.count * r.count * c.count);
        total.store += tiles * (quant + requant);
        total.write += tiles * (m.size * out + sch::kStoreDepth);
      }
  return total;
}

// DDR traffic of a pool (accel_pool.h): per tile, each channel's valid input rows (one run when
// whole rows; with whole planes a tile's channels follow each other, one run) and each lane's
// output (one run per lane, or per row for a column tile; whole planes: one run per tile).
void pool_traffic(const KernelTiling& k, uint64_t burst, CostBreakdown& cb) {
  const ConvGeometry& g = k.g;
  const TileShape& t = k.t;
  const uint64_t tiles = ceil_div(g.out_c, t.m) * ceil_div(g.out_h, t.r) * ceil_div(g.out_w, t.c);
  const bool single_rows = ceil_div(g.out_h, t.r) == 1;
  cb.dma_calls = 2 * tiles;
  for (uint32_t r0 = 0; r0 < g.out_h; r0 += t.r) {
    const uint32_t rc = std::min(t.r, g.out_h - r0);
    const uint64_t v = valid_inputs(r0, rc, 1, 0, 1, false, g.stride_h, g.pad_top, g.kernel_h, 1, g.in_h);
    for (uint32_t c0 = 0; c0 < g.out_w; c0 += t.c) {
      const uint32_t cc = std::min(t.c, g.out_w - c0);
      const uint64_t vc =
          k.whole_rows ? g.in_w : valid_inputs(c0, cc, 1, 0, 1, false, g.stride_w, g.pad_left, g.kernel_w, 1, g.in_w);
      for (const Extent& m : k.ms) {
        if (v > 0 && vc > 0) {
          const uint64_t runs = k.whole_rows ? 1 : v, run = k.whole_rows ? v * g.in_w : vc;
          cb.input_bytes += m.count * m.size * v * vc;
          if (k.whole_rows && v == g.in_h) {
            cb.dma_runs += m.count;
            cb.bursts += m.count * ceil_div(m.size * v * vc, burst);
          } else {
            cb.dma_runs += m.count * m.size * runs;
            cb.bursts += m.count * m.size * runs * ceil_div(run, burst);
          }
        }
        cb.output_bytes += m.count * m.size * rc * cc;
        if (k.whole_rows && single_rows) {
          cb.dma_runs += m.count;
          cb.bursts += m.count * ceil_div(static_cast<uint64_t>(m.size) * rc * cc, burst);
        } else {
          const uint64_t runs = k.whole_rows ? 1 : rc, run = k.whole_rows ? static_cast<uint64_t>(rc) * g.out_w : cc;
          cb.dma_runs += m.count * m.size * runs;
          cb.bursts += m.count * m.size * runs * ceil_div(run, burst);
        }
      }
    }
  }
}

KernelTiling make_tiling(const ConvGeometry& g, const BoardProfile& b, const TileShape& t, uint32_t slice_m,
                         uint32_t slice_r) {
  KernelTiling k{g, b, t, false, false, g.kernel_h * g.kernel_w, 0, 1, {}, {}, {}, {}};
  k.fold = !t.fold_rows && sch::folds_kernel_width(g.groups, t.n, g.kernel_w, g.dilation_w);
  k.whole_rows = t.c >= g.out_w;
  k.per_channel = sch::vector_per_channel(t.fold_rows, k.fold, g.kernel_h, g.kernel_w);
  k.tap_rows = t.fold_rows ? 1 : (k.fold ? g.kernel_h : k.taps);
  k.ms = extents(slice_m, t.m);
  k.ns = extents(g.in_per_group(), t.n);
  k.rs = extents(slice_r, t.r);
  k.cs = extents(g.out_w, t.c);
  k.depthwise = sch::depthwise_lanes(g.in_c, g.out_c, g.groups, g.dilation_w);
  return k;
}

}  // namespace

uint64_t input_buffer_bytes(const ConvGeometry& g, const TileShape& t) {
  const uint64_t rows = static_cast<uint64_t>(g.conv_rows(t.r) - 1) * g.stride_h + (g.kernel_h - 1) * g.dilation_h + 1;
  const uint64_t cols = static_cast<uint64_t>(g.conv_cols(t.c) - 1) * g.stride_w + (g.kernel_w - 1) * g.dilation_w + 1;
  const uint64_t pitch =
      sch::input_pitch(t.c >= g.out_w ? g.in_w : static_cast<uint32_t>(cols), t.fold_rows, g.kernel_w);
  return static_cast<uint64_t>(g.tile_in_channels(t.m, t.n)) * ceil_div(rows * pitch, abi::kBanks) * abi::kBanks;
}

uint64_t weight_buffer_bytes(const ConvGeometry& g, const TileShape& t) {
  return static_cast<uint64_t>(t.m) * ceil_div(static_cast<uint64_t>(t.n) * g.kernel_h * g.kernel_w, abi::kBanks) *
         abi::kBanks;
}

KernelCycles kernel_cycles(const ConvGeometry& g, const BoardProfile& b, const TileShape& t, uint32_t slice_m,
                           uint32_t slice_r, bool input_stationary) {
  KernelTiling k = make_tiling(g, b, t, slice_m, slice_r);
  k.input_once = input_stationary;
  KernelCycles c;
  c.compute = compute_half(k);
  c.load = load_half(k, slice_r);
  const StoreWrite sw = store_half(k);
  c.store = sw.store;
  c.write = sw.write;
  const double out_tiles =
      static_cast<double>(ceil_div(slice_m, t.m) * ceil_div(slice_r, t.r) * ceil_div(g.out_w, t.c));
  c.fill = (c.store + c.write) / out_tiles;
  return c;
}

double kernel_mac_floor(const ConvGeometry& g, const BoardProfile& b, const TileShape& t) {
  const KernelTiling k = make_tiling(g, b, t, g.out_c, g.out_h);
  if (k.depthwise) {  // the depthwise pixel loops: rows x input-column spans x kernel rows per m-tile
    double m_tiles = 0, rows = 0, spans = 0;
    for (const Extent& m : k.ms) m_tiles += static_cast<double>(m.count);
    for (const Extent& r : k.rs) rows += static_cast<double>(r.count) * g.conv_rows(r.size);
    for (const Extent& c : k.cs)
      spans += static_cast<double>(c.count) * sch::depthwise_span(g.conv_cols(c.size), g.stride_w, g.kernel_w);
    return m_tiles * g.kernel_h * rows * spans * sch::conv_pixel_ii(b.mac_lanes) / std::max(1u, b.compute_units);
  }
  double per_pixel = 0;  // chunk-cycles per conv pixel and tap row, summed over m-tiles and k-tiles
  for (const Extent& m : k.ms)
    for (const Extent& n : k.ns) {
      const uint32_t vec =
          sch::vector_length(k.per_channel, k.per_channel > 1 ? n.size : tile_channels(k, m.size, n.size));
      const uint32_t groups = static_cast<uint32_t>(ceil_div(vec, abi::kMaxVector));
      const uint32_t last = vec - (groups - 1) * abi::kMaxVector;
      double chunks =
          (groups - 1) * sch::vector_chunks(abi::kMaxVector, b.mac_channels) + sch::vector_chunks(last, b.mac_channels);
      if (sch::spreads_pixels(g.groups, g.kernel_h, g.kernel_w, g.stride_h, g.stride_w, m.size, 1, 1, 1)) {
        // Spread steps: at least half the pixels' iterations, in chunks of spread_channels.
        const uint32_t sc = sch::spread_channels(b.mac_channels);
        chunks = std::min(
            chunks, ((groups - 1) * sch::vector_chunks(abi::kMaxVector, sc) + sch::vector_chunks(last, sc)) / 2.0);
      }
      per_pixel += static_cast<double>(m.count * n.count) * chunks;
    }
  double rows = 0, cols = 0;
  for (const Extent& r : k.rs) rows += static_cast<double>(r.count) * g.conv_rows(r.size);
  for (const Extent& c : k.cs) cols += static_cast<double>(c.count) * g.conv_cols(c.size);
  return per_pixel * k.tap_rows * sch::conv_pixel_ii(b.mac_lanes) * rows * cols / std::max(1u, b.compute_units);
}

ConvGeometry pool_geometry(const abi::LayerDesc& d) {
  ConvGeometry g{d.out_c,  d.in_h,          d.in_w,          d.out_c, d.out_h, d.out_w, d.pool_h,
                 d.pool_w, d.pool_stride_h, d.pool_stride_w, 1,       1,       d.out_c};
  g.pad_top = d.pool_pad_top;
  g.pad_left = d.pool_pad_left;
  return g;
}

void kernel_pool_cost(const abi::LayerDesc& d, const BoardProfile& b, CostBreakdown& cb) {
  const ConvGeometry g = pool_geometry(d);
  const TileShape t{d.tile_m, 1, d.tile_r, d.tile_c};
  const KernelTiling k = make_tiling(g, b, t, g.out_c, g.out_h);
  const double window = static_cast<double>(d.pool_h) * d.pool_w;
  const bool average = d.pool_kind == abi::kPoolAverage;
  cb.load_cycles = load_half(k, g.out_h, false);
  const uint64_t out_plane = static_cast<uint64_t>(g.out_h) * g.out_w;
  double pool = 0, write = average ? 1 + sch::kQuantReadDepth : 0;
  for (const Extent& m : k.ms)
    for (const Extent& r : k.rs)
      for (const Extent& c : k.cs) {
        const double n = static_cast<double>(m.count * r.count * c.count);
        pool += n * (static_cast<double>(r.size) * c.size * window + sch::kPoolDepth);
        const double out = k.whole_rows ? beats(static_cast<double>(r.size) * g.out_w,
                                                align_of({out_plane, static_cast<uint64_t>(t.r) * g.out_w}))
                                        : r.size * beats(c.size, align_of({out_plane, g.out_w, t.c}));
        write += n * (m.size * out + sch::kStoreDepth);
        if (average) write += n * (static_cast<double>(r.size) * c.size + sch::kRequantDepth);  // requant_tile
      }
  cb.mac_cycles = pool;
  cb.store_cycles = write;
  cb.serial_store = true;
  cb.steps = ceil_div(g.out_c, t.m) * ceil_div(g.out_h, t.r) * ceil_div(g.out_w, t.c);
  cb.macs = static_cast<uint64_t>(g.out_c) * out_plane * d.pool_h * d.pool_w;
  cb.input_tile_bytes = input_buffer_bytes(g, t);
  cb.output_tile_bytes = static_cast<uint64_t>(t.m) * t.r * t.c;
  pool_traffic(k, b.burst_bytes, cb);
  cb.quant_bytes = average ? 8 : 0;
  if (average) {
    ++cb.dma_calls, ++cb.dma_runs, ++cb.bursts;
  }
}

void kernel_add_cost(const abi::LayerDesc& d, const BoardProfile& b, CostBreakdown& cb) {
  const uint64_t plane = static_cast<uint64_t>(d.out_h) * d.out_w, block = d.out_c * plane;
  const uint64_t chunk = std::max<uint64_t>(1, std::min<uint64_t>(block, static_cast<uint64_t>(d.tile_r) * d.tile_c));
  const uint64_t chunks = ceil_div(block, chunk), last = block - (chunks - 1) * chunk;
  // Run starts: 64-aligned tensors + channel_base x plane + a multiple of the chunk.
  const auto align = [&](uint32_t base) { return align_of({base * plane, chunk}); };
  const auto runs = [&](uint32_t base) {
    return static_cast<double>(chunks - 1) * beats(static_cast<double>(chunk), align(base)) +
           beats(static_cast<double>(last), align(base));
  };
  cb.load_cycles = runs(d.in_channel_base) + runs(d.in2_channel_base) + 2.0 * chunks * sch::kLoadDepth;
  cb.mac_cycles = static_cast<double>((chunks - 1) * ceil_div(chunk, b.add_lanes) + ceil_div(last, b.add_lanes)) +
                  static_cast<double>(chunks) * sch::kAddDepth;
  const double quant = beats(12, align_of({4ull * d.quant_offset})) + sch::kQuantReadDepth;
  cb.store_cycles = runs(d.out_channel_base) + static_cast<double>(chunks) * sch::kStoreDepth + quant;
  // Chunks ping-pong (reads of c + 1 || lanes of c || writes of c - 1): the first chunk's reads
  // (finish_cost: load / steps), the quant read before the loop and the last chunk's lanes and
  // writes are exposed.
  cb.fill_cycles = quant + static_cast<double>(ceil_div(last, b.add_lanes)) + sch::kAddDepth +
                   beats(static_cast<double>(last), align(d.out_channel_base)) + sch::kStoreDepth;
  // Traffic: per chunk one read run per input and one write run, plus the {M_a, M_b, S} read.
  for (uint64_t n : {chunks - 1, uint64_t{1}}) {
    const uint64_t bytes = n == 1 ? last : chunk;
    if (n == 0) continue;
    cb.dma_calls += 3 * n;
    cb.dma_runs += 3 * n;
    cb.bursts += 3 * n * ceil_div(bytes, b.burst_bytes);
    cb.input_bytes += 2 * n * bytes;
    cb.output_bytes += n * bytes;
  }
  ++cb.dma_calls, ++cb.dma_runs, ++cb.bursts;
  cb.quant_bytes = 12;
  cb.steps = chunks;
  cb.input_tile_bytes = 2 * chunk;
  cb.output_tile_bytes = 0;  // the result overwrites the first input's chunk
  cb.macs = block;
}

}  // namespace tessera::plan
