#include "accel/host/onednn/onednn_conv.h"

#include <omp.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "accel/host/host_threads.h"
#include "accel/host/model_cache.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace tessera::host {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using dims = dnnl::memory::dims;

// Output channels per part when a conv is split: oneDNN's AVX-512 blocks are 16 channels.
constexpr int64_t kChannelGrain = 16;

const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// One part of a conv: groups [g0, g0 + groups) of a grouped conv, or output channels
// [oc0, oc0 + ocs) of an ungrouped one; it reads and writes its slices of the whole tensors.
struct ConvPart {
  int64_t src_c0, src_cs;  // input channels read
  int64_t groups;          // 1 for an ungrouped conv
  int64_t oc0, ocs;        // output channels written
};

// A strided NCHW desc: `cs` channels of a tensor of `shape` (whose channel count sets the strides).
dnnl::memory::desc channel_slice(const Shape& shape, int64_t cs) {
  const int64_t plane = shape[2] * shape[3];
  return {{shape[0], cs, shape[2], shape[3]}, dt::f32, dims{shape[1] * plane, plane, shape[3], 1}};
}

// The same in NHWC order (strides N: H*W*C, C: 1, H: W*C, W: C).
dnnl::memory::desc channel_slice_nhwc(const Shape& shape, int64_t cs) {
  const int64_t c = shape[1];
  return {{shape[0], cs, shape[2], shape[3]}, dt::f32, dims{shape[2] * shape[3] * c, 1, shape[3] * c, c}};
}

// A reorder primitive and the working memory it wants (often none).
struct Reorder {
  dnnl::reorder prim;
  dnnl::memory::desc scratchpad;
};

// One part's primitives, made once per geometry: oneDNN caches primitives but not primitive
// descriptors, whose creation (asking every implementation) costs more than a small layer.
struct PartPrimitives {
  dnnl::convolution_forward conv;
  dnnl::memory::desc src_user, wei_user, dst_user, bias;  // Tessera's layouts
  dnnl::memory::desc src, wei, dst;                       // oneDNN's
  dnnl::memory::desc scratchpad;                          // the conv's working memory
  std::optional<Reorder> src_in, wei_in, dst_out;         // where the two differ
};

// The reorder from `from` to `to`, or none when they are the same layout.
std::optional<Reorder> reorder_between(const dnnl::memory::desc& from, const dnnl::memory::desc& to) {
  if (from == to) return std::nullopt;
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // see make_part
  const dnnl::reorder::primitive_desc pd(cpu_engine(), from, cpu_engine(), to, attr);
  return Reorder{dnnl::reorder(pd), pd.scratchpad_desc()};
}

// The activation as a oneDNN post-op of the conv (applied to each result as it is written).
dnnl::post_ops activation_post_ops(const Activation& act) {
  dnnl::post_ops ops;
  if (act.kind == Activation::Kind::kRelu) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  if (act.kind == Activation::Kind::kClip) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, act.min, act.max);
  return ops;
}

std::shared_ptr<const PartPrimitives> make_part(const Shape& x, const Shape& w, const Shape& y, bool has_bias,
                                                const ConvAttrs& attrs, const ConvOptions& options,
                                                const ConvPart& part) {
  const int64_t kh = w[2], kw = w[3];
  const dims wei_dims =
      part.groups == 1 ? dims{part.ocs, w[1], kh, kw} : dims{part.groups, part.ocs / part.groups, w[1], kh, kw};
  const dims strides{attrs.stride[0], attrs.stride[1]};
  // oneDNN counts dilation from 0 (none), ONNX from 1.
  const dims dilation{attrs.dilation[0] - 1, attrs.dilation[1] - 1};
  const dims pad_l{attrs.pads[0], attrs.pads[1]}, pad_r{attrs.pads[2], attrs.pads[3]};
  const dnnl::memory::desc src_user =
      options.src_nhwc ? channel_slice_nhwc(x, part.src_cs) : channel_slice(x, part.src_cs);
  const dnnl::memory::desc dst_user = options.dst_nhwc ? channel_slice_nhwc(y, part.ocs) : channel_slice(y, part.ocs);
  const dnnl::memory::desc src_any({x[0], part.src_cs, x[2], x[3]}, dt::f32, tag::any);
  const dnnl::memory::desc wei_md(wei_dims, dt::f32, tag::any);
  const dnnl::memory::desc bias_md({part.ocs}, dt::f32, tag::x);
  const dnnl::memory::desc dst_any({y[0], part.ocs, y[2], y[3]}, dt::f32, tag::any);
  const auto prop = dnnl::prop_kind::forward_inference;
  const auto algo = dnnl::algorithm::convolution_direct;
  // The scratchpad is the caller's (run_part's thread-local buffer): a cached primitive runs on
  // several threads at once, and oneDNN's own scratchpad belongs to the thread that made it.
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  attr.set_post_ops(activation_post_ops(options.activation));
  auto make_pd = [&](const dnnl::memory::desc& src_md, const dnnl::memory::desc& dst_md) {
    return has_bias
               ? dnnl::convolution_forward::primitive_desc(
                     {prop, algo, src_md, wei_md, bias_md, dst_md, strides, dilation, pad_l, pad_r}, attr, cpu_engine())
               : dnnl::convolution_forward::primitive_desc(
                     {prop, algo, src_md, wei_md, dst_md, strides, dilation, pad_l, pad_r}, attr, cpu_engine());
  };
  // NHWC activations are oneDNN's own layout for these convs: the conv reads and writes the
  // caller's tensors in place (a part's channel slice included) when an optimised implementation
  // takes them as they are; else (a reference or GEMM one) its preferred layouts and reorders.
  std::optional<dnnl::convolution_forward::primitive_desc> chosen;
  if (options.src_nhwc || options.dst_nhwc) {
    try {
      auto direct = make_pd(options.src_nhwc ? src_user : src_any, options.dst_nhwc ? dst_user : dst_any);
      const std::string impl = direct.impl_info_str();
      if (impl.find("brg") != std::string::npos || impl.find("jit") != std::string::npos) chosen = direct;
    } catch (const dnnl::error&) {
      // no implementation takes these layouts as given
    }
  }
  if (!chosen) chosen = make_pd(src_any, dst_any);
  const dnnl::convolution_forward::primitive_desc& pd = *chosen;
  auto p = std::make_shared<PartPrimitives>();
  p->conv = dnnl::convolution_forward(pd);
  p->src_user = src_user;
  p->wei_user = dnnl::memory::desc(wei_dims, dt::f32, part.groups == 1 ? tag::oihw : tag::goihw);
  p->dst_user = dst_user;
  p->bias = bias_md;
  p->src = pd.src_desc();
  p->wei = pd.weights_desc();
  p->dst = pd.dst_desc();
  p->scratchpad = pd.scratchpad_desc();
  p->src_in = reorder_between(p->src_user, p->src);
  p->wei_in = reorder_between(p->wei_user, p->wei);
  p->dst_out = reorder_between(p->dst, p->dst_user);
  return p;
}

int64_t float_bits(float f) {
  uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

// What a part's primitives depend on: the shapes, attributes, activation and part size.
std::vector<int64_t> part_key(const Shape& x, const Shape& w, const Shape& y, bool has_bias, const ConvAttrs& attrs,
                              const ConvOptions& options, const ConvPart& part) {
  const Activation& act = options.activation;
  std::vector<int64_t> key{x[0],
                           x[1],
                           x[2],
                           x[3],
                           w[0],
                           w[1],
                           w[2],
                           w[3],
                           y[2],
                           y[3],
                           has_bias ? 1 : 0,
                           attrs.group,
                           part.src_cs,
                           part.groups,
                           part.ocs,
                           static_cast<int64_t>(act.kind),
                           float_bits(act.min),
                           float_bits(act.max),
                           options.src_nhwc ? 1 : 0,
                           options.dst_nhwc ? 1 : 0};
  for (int v : attrs.stride) key.push_back(v);
  for (int v : attrs.dilation) key.push_back(v);
  for (int v : attrs.pads) key.push_back(v);
  return key;
}

// The part's primitives from a process-wide cache keyed by its geometry (shapes only, never
// data: the weights are read on every call, or come from the model's cache).
std::shared_ptr<const PartPrimitives> part_primitives(const std::vector<int64_t>& key, const Shape& x, const Shape& w,
                                                      const Shape& y, bool has_bias, const ConvAttrs& attrs,
                                                      const ConvOptions& options, const ConvPart& part) {
  // Distinct layer shapes of the loaded models x parts x batch sizes stay far below this.
  constexpr size_t kMaxEntries = 4096;
  static std::mutex mutex;
  static std::map<std::vector<int64_t>, std::shared_ptr<const PartPrimitives>> cache;
  {
    const std::lock_guard lock(mutex);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  auto made = make_part(x, w, y, has_bias, attrs, options, part);
  const std::lock_guard lock(mutex);
  if (cache.size() >= kMaxEntries) cache.clear();
  return cache.emplace(key, std::move(made)).first->second;
}

struct FreeFloats {
  void operator()(float* p) const { std::free(p); }
};

// A 64-byte aligned buffer of at least `bytes`.
std::unique_ptr<float, FreeFloats> aligned_floats(size_t bytes) {
  std::unique_ptr<float, FreeFloats> p(static_cast<float*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64)));
  if (!p) throw std::bad_alloc();
  return p;
}

// A reused, 64-byte aligned buffer of the calling thread for oneDNN's layouts of one role (a
// fresh allocation per call would fault its pages in each time).
class Scratch {
 public:
  float* get(size_t bytes) {
    if (bytes > size_) {
      data_ = aligned_floats(bytes);
      size_ = bytes;
    }
    return data_.get();
  }

 private:
  std::unique_ptr<float, FreeFloats> data_;
  size_t size_ = 0;
};

// A reused buffer for each role of one part's run on the calling thread.
struct PartScratch {
  Scratch src, wei, dst, conv, reorder;
};

// The thread's working memory as the `desc` memory argument (none when it is empty).
void add_scratchpad(std::unordered_map<int, dnnl::memory>& args, const dnnl::memory::desc& desc, Scratch& scratch) {
  if (desc.get_size() > 0) args[DNNL_ARG_SCRATCHPAD] = dnnl::memory(desc, cpu_engine(), scratch.get(desc.get_size()));
}

void run_reorder(const Reorder& r, dnnl::memory& from, dnnl::memory& to, Scratch& scratch, dnnl::stream& stream) {
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
  add_scratchpad(args, r.scratchpad, scratch);
  r.prim.execute(stream, args);
}

// `user` in the primitive's layout: itself, or reordered into `buffer`.
dnnl::memory converted(dnnl::memory user, const std::optional<Reorder>& reorder, const dnnl::memory::desc& to,
                       Scratch& buffer, Scratch& scratch, dnnl::stream& stream) {
  if (!reorder) return user;
  dnnl::memory out(to, cpu_engine(), buffer.get(to.get_size()));
  run_reorder(*reorder, user, out, scratch, stream);
  return out;
}

// Runs one part on the calling thread, oneDNN on one thread (the split is the host's own:
// see onednn_conv2d).
void run_part(const Tensor& x, const Tensor& w, const Tensor* bias, const ConvAttrs& attrs, const ConvOptions& options,
              Tensor& y, const ConvPart& part) {
  omp_set_num_threads(1);
  thread_local PartScratch scratch;
  const std::vector<int64_t> key = part_key(x.shape, w.shape, y.shape, bias != nullptr, attrs, options, part);
  const auto p = part_primitives(key, x.shape, w.shape, y.shape, bias != nullptr, attrs, options, part);
  dnnl::stream stream(cpu_engine());
  const int64_t x_plane = x.dim(2) * x.dim(3), y_plane = y.dim(2) * y.dim(3);
  // oneDNN's memory objects take non-const handles; the inputs are only read.
  const int64_t src_offset = options.src_nhwc ? part.src_c0 : part.src_c0 * x_plane;
  const int64_t dst_offset = options.dst_nhwc ? part.oc0 : part.oc0 * y_plane;
  dnnl::memory src_user(p->src_user, cpu_engine(), const_cast<float*>(x.ptr() + src_offset));
  dnnl::memory wei_user(p->wei_user, cpu_engine(),
                        const_cast<float*>(w.ptr() + part.oc0 * w.dim(1) * w.dim(2) * w.dim(3)));
  dnnl::memory dst_user(p->dst_user, cpu_engine(), y.ptr() + dst_offset);
  dnnl::memory dst = p->dst_out ? dnnl::memory(p->dst, cpu_engine(), scratch.dst.get(p->dst.get_size())) : dst_user;
  // The weights in oneDNN's layout: reordered once per model and part when the caller keeps a
  // cache for the model, else on every call.
  ModelCache::Entry cached;
  if (options.cache != nullptr && p->wei_in) {
    std::vector<int64_t> wei_key = key;
    wei_key.push_back(part.oc0);
    cached = options.cache->get(w.ptr(), wei_key, [&]() -> ModelCache::Entry {
      std::shared_ptr<float> buffer(aligned_floats(p->wei.get_size()).release(), FreeFloats());
      dnnl::memory out(p->wei, cpu_engine(), buffer.get());
      run_reorder(*p->wei_in, wei_user, out, scratch.reorder, stream);
      stream.wait();
      return buffer;
    });
  }
  dnnl::memory wei = cached ? dnnl::memory(p->wei, cpu_engine(), const_cast<void*>(cached.get()))
                            : converted(wei_user, p->wei_in, p->wei, scratch.wei, scratch.reorder, stream);
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, converted(src_user, p->src_in, p->src, scratch.src, scratch.reorder, stream)},
      {DNNL_ARG_WEIGHTS, wei},
      {DNNL_ARG_DST, dst}};
  add_scratchpad(args, p->scratchpad, scratch.conv);
  if (bias != nullptr) {
    args[DNNL_ARG_BIAS] = dnnl::memory(p->bias, cpu_engine(), const_cast<float*>(bias->ptr() + part.oc0));
  }
  p->conv.execute(stream, args);
  if (p->dst_out) run_reorder(*p->dst_out, dst, dst_user, scratch.reorder, stream);
  stream.wait();
}

}  // namespace

bool onednn_conv_enabled() {
  static const bool enabled = std::getenv("TESSERA_HOST_PORTABLE") == nullptr;
  return enabled;
}

Result<Tensor> onednn_conv2d(const Tensor& x, const Tensor& w, const Tensor* bias, const ConvAttrs& attrs,
                             const Shape& out_shape, const HostThreads& threads, const ConvOptions& options) {
  Tensor y(out_shape);
  const int64_t group = attrs.group, cg = x.dim(1) / group, mg = w.dim(0) / group;
  try {
    // Split by output channels (ungrouped) or whole groups (grouped, depthwise): each part is
    // its own oneDNN conv on one thread.
    const int64_t units = group == 1 ? w.dim(0) : group;
    const int64_t grain = group == 1 ? kChannelGrain : std::max<int64_t>(1, kChannelGrain / mg);
    parallel_parts(threads, units, grain, [&](int64_t begin, int64_t end) {
      const ConvPart part = group == 1
                                ? ConvPart{0, x.dim(1), 1, begin, end - begin}
                                : ConvPart{begin * cg, (end - begin) * cg, end - begin, begin * mg, (end - begin) * mg};
      run_part(x, w, bias, attrs, options, y, part);
    });
    return y;
  } catch (const dnnl::error& e) {
    return Status::internal(std::string("oneDNN convolution: ") + e.what());
  }
}

}  // namespace tessera::host
