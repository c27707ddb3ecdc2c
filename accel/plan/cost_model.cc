#include "accel/plan/cost_model.h"

#include <algorithm>

#include "accel/plan/kernel_cycles.h"

namespace tessera::plan {
namespace {

// Sum of f(tile extent) over the tiles of `extent` split into slices of `slice`, each slice
// into tiles of `tile` (the last slice and the last tile of each slice may be shorter).
template <class F>
uint64_t sum_tiles(uint32_t extent, uint32_t slice, uint32_t tile, F f) {
  uint64_t s = 0;
  for (uint32_t base = 0; base < extent; base += slice) {
    const uint32_t se = std::min(slice, extent - base);
    s += static_cast<uint64_t>(se / tile) * f(tile) + (se % tile ? f(se % tile) : 0);
  }
  return s;
}

uint64_t count_tiles(uint32_t extent, uint32_t slice, uint32_t tile) {
  return sum_tiles(extent, slice, tile, [](uint32_t) -> uint64_t { return 1; });
}

// Slices of the filters (M) and output rows (R) per CU (TSO, seeds/002, Algorithm 2).
struct Slices {
  uint32_t m, r;
};

Slices slice_layer(const ConvGeometry& g, uint32_t cus, PartitionKind p) {
  switch (p) {
    case PartitionKind::kKs: return {static_cast<uint32_t>(ceil_div(g.out_c, cus)), g.out_h};
    case PartitionKind::kOfm: return {g.out_c, static_cast<uint32_t>(ceil_div(g.out_h, cus))};
    case PartitionKind::kKsOfm:
      return {static_cast<uint32_t>(ceil_div(g.out_c, 2)),
              static_cast<uint32_t>(ceil_div(g.out_h, std::max(1u, cus / 2)))};
  }
  return {g.out_c, g.out_h};
}

}  // namespace

const char* schedule_name(Schedule s) {
  switch (s) {
    case Schedule::kInputStationary: return "IS";
    case Schedule::kOutputStationary: return "OS";
    case Schedule::kWeightStationary: return "WS";
  }
  return "?";
}

const char* partition_name(PartitionKind p) {
  switch (p) {
    case PartitionKind::kKs: return "KS";
    case PartitionKind::kOfm: return "OFM";
    case PartitionKind::kKsOfm: return "KS&OFM";
  }
  return "?";
}

uint32_t ConvGeometry::in_rows(uint32_t out) const {
  return std::min(in_h, (conv_rows(out) - 1) * stride_h + (kernel_h - 1) * dilation_h + 1);
}

uint32_t ConvGeometry::in_cols(uint32_t out) const {
  return std::min(in_w, (conv_cols(out) - 1) * stride_w + (kernel_w - 1) * dilation_w + 1);
}

uint32_t ConvGeometry::tile_in_channels(uint32_t m, uint32_t n) const {
  const uint32_t groups_in_tile = m > out_per_group() ? m / out_per_group() : 1;
  return groups_in_tile * n;
}

ConvGeometry conv_geometry(const abi::LayerDesc& d) {
  ConvGeometry g{d.in_c,
                 d.in_h,
                 d.in_w,
                 d.out_c,
                 d.out_h,
                 d.out_w,
                 d.kernel_h,
                 d.kernel_w,
                 d.stride_h,
                 d.stride_w,
                 std::max(1u, d.dilation_h),
                 std::max(1u, d.dilation_w),
                 std::max(1u, d.groups)};
  g.pad_top = d.pad_top;
  g.pad_left = d.pad_left;
  if (d.pool_kind == abi::kPoolMax) {
    g.pool_pad_top = d.pool_pad_top;
    g.pool_pad_left = d.pool_pad_left;
    g.pooled = true;
    g.pool_h = d.pool_h;
    g.pool_w = d.pool_w;
    g.pool_stride_h = d.pool_stride_h;
    g.pool_stride_w = d.pool_stride_w;
  }
  return g;
}

abi::LayerDesc make_conv_desc(uint32_t in_c, uint32_t in_h, uint32_t in_w, uint32_t out_c, uint32_t kernel,
                              uint32_t stride, uint32_t groups) {
  abi::LayerDesc d{};
  d.op = abi::kOpConv;
  d.in_c = in_c;
  d.in_h = in_h;
  d.in_w = in_w;
  d.in_channels_total = in_c;
  d.out_c = out_c;
  d.out_channels_total = out_c;
  d.out_h = (in_h + stride - 1) / stride;  // 'same' padding
  d.out_w = (in_w + stride - 1) / stride;
  d.conv_h = d.out_h;
  d.conv_w = d.out_w;
  d.kernel_h = d.kernel_w = kernel;
  d.stride_h = d.stride_w = stride;
  d.pad_top = d.pad_left = (kernel - 1) / 2;
  d.dilation_h = d.dilation_w = 1;
  d.groups = groups;
  d.act_lo = -128;
  d.act_hi = 127;
  d.tile_m = d.tile_n = d.tile_r = d.tile_c = 1;
  return d;
}

uint64_t tile_footprint(const ConvGeometry& g, const TileShape& t) {
  // The kernel's banked buffers (abi::layer_fits), unclamped window.
  const uint64_t out = static_cast<uint64_t>(t.m) * g.conv_rows(t.r) * g.conv_cols(t.c) * 4;
  return input_buffer_bytes(g, t) + weight_buffer_bytes(g, t) + out;
}

uint64_t compulsory_bytes(const ConvGeometry& g) {
  return static_cast<uint64_t>(g.out_c) * g.in_per_group() * g.kernel_h * g.kernel_w +
         static_cast<uint64_t>(g.out_c) * g.out_h * g.out_w;
}

double lower_bound_cycles(const ConvGeometry& g, const BoardProfile& b, const TileShape& t) {
  // The pixel loops alone (evaluate adds depths, staging, load and store).
  const double mac = kernel_mac_floor(g, b, t);
  const double dram = static_cast<double>(compulsory_bytes(g)) / b.ddr_bytes_per_cycle();
  return std::max(mac, dram);
}

double lower_bound_energy_uj(const ConvGeometry& g, const BoardProfile& b, const TileShape& t) {
  const double macs = static_cast<double>(g.out_c) * g.in_per_group() * g.kernel_h * g.kernel_w * g.conv_rows(g.out_h) *
                      g.conv_cols(g.out_w);
  const double seconds = lower_bound_cycles(g, b, t) / (b.fabric_clock_mhz * 1e6);
  return (b.pj_per_mac * macs + b.pj_per_ddr_byte * static_cast<double>(compulsory_bytes(g))) * 1e-6 +
         b.static_watts * seconds * 1e6;
}

void finish_cost(CostBreakdown& cb, const BoardProfile& b, DramModel model) {
  // Burst model: whole bursts cross the bus, each contiguous run opens with a CAS latency (TSO
  // Algorithm 4, charged per non-contiguous access) and each DMA call pays its start cost C
  // (seeds/000 eq. 1). Volume model: bytes / bandwidth only (TSO-noburst).
  cb.dram_cycles = model == DramModel::kBurst
                       ? static_cast<double>(cb.bursts) * b.burst_bytes / b.ddr_bytes_per_cycle() +
                             static_cast<double>(cb.dma_runs) * b.cas_cycles +
                             static_cast<double>(cb.dma_calls) * b.dma_start_cycles
                       : static_cast<double>(cb.ddr_bytes) / b.ddr_bytes_per_cycle();
  cb.dma_cycles = static_cast<double>(cb.dma_calls) * b.dma_start_cycles +
                  static_cast<double>(cb.dma_runs) * b.dma_scatter_cycles +
                  static_cast<double>(cb.ddr_bytes) * b.dma_byte_cycles;
  // Load, compute and store run concurrently on ping-pong buffers; the first load and the last
  // store (fill_cycles) are exposed. The load half moves no faster than its loops (load_cycles)
  // nor than DDR (dram_cycles).
  const double load = std::max(cb.dram_cycles, cb.load_cycles);
  if (cb.serial_all) {  // the loops one after the other; DDR beside them
    const double loops = cb.load_cycles + cb.mac_cycles + cb.store_cycles;
    cb.total_cycles = std::max(loops, cb.dram_cycles);
    cb.memory_bound = cb.dram_cycles > loops;
    const double secs = cb.total_cycles / (b.fabric_clock_mhz * 1e6);
    cb.energy_uj =
        (b.pj_per_mac * static_cast<double>(cb.macs) + b.pj_per_ddr_byte * static_cast<double>(cb.ddr_bytes)) * 1e-6 +
        b.static_watts * secs * 1e6;
    return;
  }
  const double compute =
      cb.serial_store ? cb.mac_cycles + cb.store_cycles : std::max({cb.mac_cycles, cb.store_cycles, cb.write_cycles});
  cb.total_cycles =
      std::max(compute, load) + load / static_cast<double>(std::max<uint64_t>(1, cb.steps)) + cb.fill_cycles;
  cb.memory_bound = load > compute;
  const double seconds = cb.total_cycles / (b.fabric_clock_mhz * 1e6);
  cb.energy_uj =
      (b.pj_per_mac * static_cast<double>(cb.macs) + b.pj_per_ddr_byte * static_cast<double>(cb.ddr_bytes)) * 1e-6 +
      b.static_watts * seconds * 1e6;
}

CostBreakdown evaluate_handover(uint64_t bytes_out, uint64_t bytes_in, const BoardProfile& b, DramModel model) {
  CostBreakdown cb;
  const uint64_t burst = std::max<uint32_t>(1, b.burst_bytes);
  cb.output_bytes = bytes_out;
  cb.input_bytes = bytes_in;
  cb.ddr_bytes = bytes_out + bytes_in;
  cb.dma_calls = 2;  // the host's read and write
  cb.dma_runs = 2;
  cb.bursts = (bytes_out + burst - 1) / burst + (bytes_in + burst - 1) / burst;
  cb.cus_used = 1;
  cb.serial_all = true;  // nothing of the fabric's overlaps it: the next program waits for its input
  finish_cost(cb, b, model);
  // The next program's launch (one more DMA start: the descriptors) is never hidden.
  cb.total_cycles += b.dma_start_cycles;
  cb.energy_uj += b.static_watts * b.dma_start_cycles / b.fabric_clock_mhz;
  return cb;
}

namespace {

// The layer cut into per-CU slices and tiles: the counts every traffic term shares.
struct TiledLayer {
  const ConvGeometry& g;
  TileShape t;
  uint32_t B;   // burst bytes
  uint64_t kk;  // kernel_h x kernel_w
  uint32_t N, M, R, C;
  Slices sl;
  uint64_t n_mslices, n_rslices;
  uint64_t MT;  // m-tiles summed over filter slices
  uint64_t TR;  // row tiles summed over row slices
  uint64_t nc, nn;
};

TiledLayer tile_layer(const ConvGeometry& g, const BoardProfile& b, const Candidate& cand) {
  const TileShape& t = cand.tile;
  const uint32_t N = g.in_per_group(), M = g.out_c, R = g.out_h, C = g.out_w;
  const Slices sl = slice_layer(g, b.compute_units, cand.partition);
  return TiledLayer{g,
                    t,
                    b.burst_bytes,
                    static_cast<uint64_t>(g.kernel_h) * g.kernel_w,
                    N,
                    M,
                    R,
                    C,
                    sl,
                    ceil_div(M, sl.m),
                    ceil_div(R, sl.r),
                    count_tiles(M, sl.m, t.m),
                    count_tiles(R, sl.r, t.r),
                    ceil_div(C, t.c),
                    ceil_div(N, t.n)};
}

// What one pass over a tensor moves.
struct PassTraffic {
  uint64_t bytes = 0, runs = 0, bursts = 0, calls = 0;
};

// Input: one "pass" reads every (row, col, channel) tile of the input once.
// kernels/accel_conv.h load_input_tile: a tile spanning all output columns (t.c >= out_w)
// reads whole input rows (in_w bytes, a superset of the in_cols the windows need, e.g. 14 for
// the 13 of a stride-2 1x1 conv), which are contiguous in CHW; any narrower tile reads each
// input row as its own run of in_cols bytes.
PassTraffic input_pass(const TiledLayer& layer) {
  const ConvGeometry& g = layer.g;
  const TileShape& t = layer.t;
  const uint32_t B = layer.B, N = layer.N, R = layer.R, C = layer.C;
  const Slices& sl = layer.sl;
  const bool in_full_width = t.c >= C;
  const uint64_t rows_sum = sum_tiles(R, sl.r, t.r, [&](uint32_t e) -> uint64_t { return g.in_rows(e); });
  const uint64_t cols_sum =
      in_full_width ? g.in_w : sum_tiles(C, C, t.c, [&](uint32_t e) -> uint64_t { return g.in_cols(e); });
  // Channels a pass reads: all of them, or for grouped convs those of one m-tile's groups.
  const uint64_t pass_ch = g.groups == 1 ? g.in_c : g.tile_in_channels(t.m, N);
  PassTraffic in;
  in.bytes = pass_ch * rows_sum * cols_sum;
  // A tile of whole channel planes (all rows and columns): in CHW the planes of consecutive
  // channels follow each other, so a step's channels are one run (and with t.n >= N, so are all
  // of a pass's).
  const bool whole_planes = in_full_width && !t.fold_rows && layer.TR == layer.n_rslices && g.in_rows(t.r) == g.in_h;
  const uint64_t plane = static_cast<uint64_t>(g.in_h) * g.in_w;
  if (whole_planes && t.n >= N) {
    in.runs = 1;
    in.bursts = ceil_div(pass_ch * plane, B);
  } else if (whole_planes) {
    in.runs = pass_ch / N * layer.nn;
    in.bursts = pass_ch / N * sum_tiles(N, N, t.n, [&](uint32_t e) -> uint64_t { return ceil_div(e * plane, B); });
  } else if (in_full_width && t.fold_rows) {
    // Whole rows at the window fold's padded pitch: one run per row.
    in.runs = pass_ch * rows_sum;
    in.bursts = pass_ch * rows_sum * ceil_div(g.in_w, B);
  } else if (in_full_width) {
    // Whole rows: one run per channel per row tile.
    in.runs = pass_ch * layer.TR;
    in.bursts = pass_ch * sum_tiles(R, sl.r, t.r, [&](uint32_t e) -> uint64_t {
                  return ceil_div(static_cast<uint64_t>(g.in_rows(e)) * g.in_w, B);
                });
  } else {
    in.runs = pass_ch * rows_sum * layer.nc;
    in.bursts =
        pass_ch * rows_sum * sum_tiles(C, C, t.c, [&](uint32_t e) -> uint64_t { return ceil_div(g.in_cols(e), B); });
  }
  in.calls = layer.TR * layer.nc * layer.nn;
  return in;
}

// Weights: one pass reads every filter once, [out_c][N][kh][kw].
PassTraffic weight_pass(const TiledLayer& layer) {
  const TileShape& t = layer.t;
  const uint32_t B = layer.B, N = layer.N, M = layer.M;
  const uint64_t kk = layer.kk;
  PassTraffic w;
  w.bytes = static_cast<uint64_t>(M) * N * kk;
  if (t.n >= N) {
    w.runs = layer.MT;  // Tm whole filters are one run
    w.bursts = sum_tiles(M, layer.sl.m, t.m, [&](uint32_t e) -> uint64_t { return ceil_div(e * N * kk, B); });
  } else {
    w.runs = static_cast<uint64_t>(M) * layer.nn;
    w.bursts = M * sum_tiles(N, N, t.n, [&](uint32_t e) -> uint64_t { return ceil_div(e * kk, B); });
  }
  w.calls = layer.MT * layer.nn;
  return w;
}

// Outputs: the final int8 write (elem 1, output rows/cols) or the int32 partial sums spilled
// between input-channel tiles (elem 4, conv rows/cols). Calls are counted by the caller.
PassTraffic output_pass(const TiledLayer& layer, uint32_t elem, bool conv) {
  const ConvGeometry& g = layer.g;
  const TileShape& t = layer.t;
  const uint32_t B = layer.B, M = layer.M, R = layer.R, C = layer.C;
  const Slices& sl = layer.sl;
  auto rows_of = [&](uint32_t e) -> uint64_t { return conv ? g.conv_rows(e) : e; };
  auto cols_of = [&](uint32_t e) -> uint64_t { return conv ? g.conv_cols(e) : e; };
  const uint64_t rsum = sum_tiles(R, sl.r, t.r, rows_of);
  const uint64_t csum = sum_tiles(C, C, t.c, cols_of);
  const uint64_t width = conv ? g.conv_cols(C) : C;
  PassTraffic out;
  out.bytes = static_cast<uint64_t>(M) * rsum * csum * elem;
  if (t.c >= C && layer.TR == layer.n_rslices) {
    // Whole planes: an m-tile's channels are one run in CHW.
    out.runs = layer.MT;
    out.bursts = sum_tiles(M, sl.m, t.m, [&](uint32_t e) -> uint64_t { return ceil_div(e * rsum * width * elem, B); });
  } else if (t.c >= C) {
    out.runs = static_cast<uint64_t>(M) * layer.TR;
    out.bursts =
        M * sum_tiles(R, sl.r, t.r, [&](uint32_t e) -> uint64_t { return ceil_div(rows_of(e) * width * elem, B); });
  } else {
    out.runs = static_cast<uint64_t>(M) * rsum * layer.nc;
    out.bursts =
        M * rsum * sum_tiles(C, C, t.c, [&](uint32_t e) -> uint64_t { return ceil_div(cols_of(e) * elem, B); });
  }
  return out;
}

// How often each tensor is passed over under a schedule.
struct SchedulePasses {
  uint64_t in = 0, w = 0, spill = 0;
};

// Passes per schedule (TSO eq. 3-5; seeds/000 eq. 5-6 for IS).
SchedulePasses schedule_passes(const TiledLayer& layer, Schedule schedule) {
  SchedulePasses p;
  switch (schedule) {
    case Schedule::kInputStationary:
      // Each filter slice's CU reads its rows' input once; grouped convs read per m-tile the
      // channels of its groups (disjoint between m-tiles covering whole groups).
      p.in = layer.g.groups == 1 ? layer.n_mslices : layer.MT;
      p.w = layer.TR * layer.nc;  // all of the slice's filters per spatial tile
      p.spill = 2 * (layer.nn - 1);
      break;
    case Schedule::kOutputStationary:
      p.in = layer.MT;  // once per m-tile
      p.w = layer.TR * layer.nc;
      p.spill = 0;
      break;
    case Schedule::kWeightStationary:
      p.in = layer.MT;
      p.w = layer.n_rslices;  // each weight tile loaded once per CU
      p.spill = 2 * (layer.nn - 1);
      break;
  }
  return p;
}

}  // namespace

CostBreakdown evaluate(const ConvGeometry& g, const BoardProfile& b, const Candidate& cand, DramModel model) {
  const TileShape& t = cand.tile;
  const TiledLayer layer = tile_layer(g, b, cand);
  CostBreakdown cb;
  cb.input_tile_bytes = static_cast<uint64_t>(g.tile_in_channels(t.m, t.n)) * g.in_rows(t.r) * g.in_cols(t.c);
  cb.weight_tile_bytes = static_cast<uint64_t>(t.m) * t.n * layer.kk;
  cb.output_tile_bytes = static_cast<uint64_t>(t.m) * g.conv_rows(t.r) * g.conv_cols(t.c) * 4;
  cb.footprint_bytes = tile_footprint(g, t);
  cb.cus_used = static_cast<uint32_t>(layer.n_mslices * layer.n_rslices);

  // ---- Traffic: per pass over each tensor, times the schedule's passes -----------------------
  const PassTraffic in = input_pass(layer), w = weight_pass(layer);
  const PassTraffic out = output_pass(layer, 1, false), spill = output_pass(layer, 4, true);
  const uint64_t o_calls = layer.MT * layer.TR * layer.nc;
  const SchedulePasses passes = schedule_passes(layer, cand.schedule);
  // Input calls: in.calls per pass (IS: per filter slice; OS/WS: per m-tile).
  const uint64_t in_calls = passes.in * in.calls;
  const uint64_t w_calls =
      cand.schedule == Schedule::kWeightStationary ? w.calls * layer.n_rslices : w.calls * layer.TR * layer.nc;
  const uint64_t out_calls = o_calls * (1 + passes.spill);

  // Quant parameters: each finished output tile reads bias, multiplier and shift of its m
  // channels, three runs of 4 x m bytes (kernels/accel_conv.h store_conv_tile).
  const uint64_t out_tiles_per_m = layer.TR * layer.nc;
  cb.quant_bytes = 12 * static_cast<uint64_t>(layer.M) * out_tiles_per_m;
  const uint64_t q_runs = 3 * layer.MT * out_tiles_per_m;
  const uint64_t q_bursts = 3 * out_tiles_per_m * sum_tiles(layer.M, layer.sl.m, t.m, [&](uint32_t e) -> uint64_t {
                              return ceil_div(uint64_t{e} * 4, layer.B);
                            });

  cb.input_bytes = passes.in * in.bytes;
  cb.weight_bytes = passes.w * w.bytes;
  cb.output_bytes = out.bytes + passes.spill * spill.bytes;
  cb.ddr_bytes = cb.input_bytes + cb.weight_bytes + cb.output_bytes + cb.quant_bytes;
  cb.dma_calls = in_calls + w_calls + out_calls;
  cb.dma_runs = passes.in * in.runs + passes.w * w.runs + out.runs + passes.spill * spill.runs + q_runs;
  cb.bursts = passes.in * in.bursts + passes.w * w.bursts + out.bursts + passes.spill * spill.bursts + q_bursts;

  // ---- Time ----------------------------------------------------------------------------------
  cb.steps = ceil_div(layer.sl.m, t.m) * ceil_div(layer.sl.r, t.r) * layer.nc * layer.nn;  // the busiest CU (TSO eq. 8)
  const KernelCycles kc =
      kernel_cycles(g, b, t, layer.sl.m, layer.sl.r, cand.schedule == Schedule::kInputStationary && layer.nn == 1);
  cb.mac_cycles = kc.compute;
  cb.load_cycles = kc.load;
  cb.store_cycles = kc.store;
  cb.write_cycles = kc.write;
  cb.fill_cycles = kc.fill;  // the last output tile's store
  cb.macs = static_cast<uint64_t>(layer.M) * layer.N * layer.kk * g.conv_rows(layer.R) * g.conv_cols(layer.C);
  finish_cost(cb, b, model);
  return cb;
}

}  // namespace tessera::plan
