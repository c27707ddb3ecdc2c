#include "accel/host/onednn/onednn_conv.h"

#include <omp.h>

#include <cstdlib>
#include <string>
#include <unordered_map>

#include "accel/host/host_threads.h"
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

// `user` as the primitive wants it: itself when the formats agree, else a reordered copy.
// (dnnl::memory is a handle: copies share the buffer.)
dnnl::memory as_format(dnnl::memory user, const dnnl::memory::desc& wanted, const dnnl::stream& stream) {
  if (user.get_desc() == wanted) return user;
  dnnl::memory converted(wanted, cpu_engine());
  dnnl::reorder(user, converted).execute(stream, user, converted);
  return converted;
}

// A channel slice [c0, c0 + cs) of an NCHW tensor with `channels` channels, as strided memory.
dnnl::memory channel_slice(const Shape& shape, int64_t c0, int64_t cs, const float* data) {
  const int64_t plane = shape[2] * shape[3];
  const dnnl::memory::desc desc({shape[0], cs, shape[2], shape[3]}, dt::f32,
                                dims{shape[1] * plane, plane, shape[3], 1});
  // oneDNN's memory objects take a non-const handle; the input slices are only read.
  return {desc, cpu_engine(), const_cast<float*>(data + c0 * plane)};
}

// Runs one part on the calling thread, oneDNN on one thread (the split is the host's own:
// see onednn_conv2d).
void run_part(const Tensor& x, const Tensor& w, const Tensor* bias, const ConvAttrs& attrs, Tensor& y,
              const ConvPart& part) {
  omp_set_num_threads(1);
  const Shape& ys = y.shape;
  const int64_t kh = w.dim(2), kw = w.dim(3), per_oc = w.dim(1) * kh * kw;
  const dims wei_dims =
      part.groups == 1 ? dims{part.ocs, w.dim(1), kh, kw} : dims{part.groups, part.ocs / part.groups, w.dim(1), kh, kw};
  const dims strides{attrs.stride[0], attrs.stride[1]};
  // oneDNN counts dilation from 0 (none), ONNX from 1.
  const dims dilation{attrs.dilation[0] - 1, attrs.dilation[1] - 1};
  const dims pad_l{attrs.pads[0], attrs.pads[1]}, pad_r{attrs.pads[2], attrs.pads[3]};
  const dnnl::memory::desc src_md({x.dim(0), part.src_cs, x.dim(2), x.dim(3)}, dt::f32, tag::any);
  const dnnl::memory::desc wei_md(wei_dims, dt::f32, tag::any);
  const dnnl::memory::desc bias_md({part.ocs}, dt::f32, tag::x);
  const dnnl::memory::desc dst_md({ys[0], part.ocs, ys[2], ys[3]}, dt::f32, tag::any);
  const auto prop = dnnl::prop_kind::forward_inference;
  const auto algo = dnnl::algorithm::convolution_direct;
  // oneDNN's primitive cache makes a repeated shape cheap to create.
  const dnnl::convolution_forward::primitive_desc pd =
      bias != nullptr
          ? dnnl::convolution_forward::primitive_desc(
                {prop, algo, src_md, wei_md, bias_md, dst_md, strides, dilation, pad_l, pad_r}, cpu_engine())
          : dnnl::convolution_forward::primitive_desc(
                {prop, algo, src_md, wei_md, dst_md, strides, dilation, pad_l, pad_r}, cpu_engine());
  dnnl::stream stream(cpu_engine());
  dnnl::memory wei_user({wei_dims, dt::f32, part.groups == 1 ? tag::oihw : tag::goihw}, cpu_engine(),
                        const_cast<float*>(w.ptr() + part.oc0 * per_oc));
  dnnl::memory dst_user = channel_slice(ys, part.oc0, part.ocs, y.ptr());
  const bool dst_direct = pd.dst_desc() == dst_user.get_desc();
  dnnl::memory dst = dst_direct ? dst_user : dnnl::memory(pd.dst_desc(), cpu_engine());
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, as_format(channel_slice(x.shape, part.src_c0, part.src_cs, x.ptr()), pd.src_desc(), stream)},
      {DNNL_ARG_WEIGHTS, as_format(wei_user, pd.weights_desc(), stream)},
      {DNNL_ARG_DST, dst}};
  if (bias != nullptr) {
    args[DNNL_ARG_BIAS] = dnnl::memory(pd.bias_desc(), cpu_engine(), const_cast<float*>(bias->ptr() + part.oc0));
  }
  dnnl::convolution_forward(pd).execute(stream, args);
  if (!dst_direct) dnnl::reorder(dst, dst_user).execute(stream, dst, dst_user);
  stream.wait();
}

}  // namespace

bool onednn_conv_enabled() {
  static const bool enabled = std::getenv("TESSERA_HOST_PORTABLE") == nullptr;
  return enabled;
}

Result<Tensor> onednn_conv2d(const Tensor& x, const Tensor& w, const Tensor* bias, const ConvAttrs& attrs,
                             const Shape& out_shape, const HostThreads& threads) {
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
      run_part(x, w, bias, attrs, y, part);
    });
    return y;
  } catch (const dnnl::error& e) {
    return Status::internal(std::string("oneDNN convolution: ") + e.what());
  }
}

}  // namespace tessera::host
