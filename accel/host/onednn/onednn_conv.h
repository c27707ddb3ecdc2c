// The fp32 reference conv through oneDNN (built when CMake finds it: TESSERA_HAVE_ONEDNN,
// cmake/find_onednn.cmake). oneDNN picks its best implementation for the CPU (brgconv:avx512_core
// here, JIT AVX2 elsewhere) and its own memory formats; the activations and weights are reordered
// from and to Tessera's NCHW / OIHW: the weights once per model and part when the caller gives the
// model's cache (ConvOptions::cache, model_cache.h), else each call; the activations each call.
// A fused Relu or Clip is the conv's eltwise post-op. The primitives themselves are made once per
// layer geometry and shared by every caller. It adds
// in another order than the portable im2col + GEMM, so results agree within float rounding, not
// bit for bit.
#pragma once

#include "accel/common/status.h"
#include "accel/graph/graph.h"
#include "accel/graph/tensor.h"
#include "accel/host/host_threads.h"
#include "accel/host/reference_ops.h"

namespace tessera::host {

// Whether conv2d takes this path: oneDNN is built in and TESSERA_HOST_PORTABLE is not set.
bool onednn_conv_enabled();

// conv2d's contract (reference_ops.h) for shapes already checked: `out_shape` is the output's.
// Split across `threads` by output channels (or whole groups), each part a oneDNN conv on one
// thread. Not oneDNN's own OpenMP threads: libgomp's waiting threads spin, and on a loaded
// machine (the emulator, the server, other processes) a spinning team stalls whenever one of its
// threads is descheduled: ResNet-18's int8 convs ran at 3.4 images/s on 2 OpenMP threads under
// load against 138 on one thread (tests/bench/onednn_conv_bench.cc). A oneDNN error is an
// INTERNAL status.
Result<Tensor> onednn_conv2d(const Tensor& x, const Tensor& w, const Tensor* bias, const ConvAttrs& attrs,
                             const Shape& out_shape, const HostThreads& threads, const ConvOptions& options = {});

}  // namespace tessera::host
