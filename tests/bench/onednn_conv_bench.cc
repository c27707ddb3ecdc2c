// tessera_onednn_bench: the oneDNN reference column of tests/bench/run_bench.sh. Runs the
// convolutions of a zoo model (every Conv node, with the input shapes Tessera's own importer and
// shape inference give it) through oneDNN, one after another as the network would, and reports
// images/s and GMAC/s: int8 (u8 activations x s8 weights -> s32 accumulators, what the int8
// accelerator computes before its requantise) or fp32. Formats are oneDNN's choice ("any") and
// reordered once outside the timing, as a library integration that keeps its weights reordered
// would run. A benchmark, not a test: only the convolutions are timed (no pool, add or FC).
//
// Usage: tessera_onednn_bench --zoo DIR [--models a,b,...] [--precision int8|fp32] [--threads N]
//                             [--seconds S] [--batches 1,8] [--path onednn|tessera] [--per-layer]
// One line per model and batch: model, batch, images/s, GMAC/s, convs, implementations; with
// --per-layer, each conv's shape, ms and GMAC/s. --path tessera times Tessera's own fp32 host conv
// (host::conv2d, what `--precision fp32` engines run) on the same shapes, for the per-layer
// comparison with OpenCV (opencv_dnn_bench.py --per-layer).
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "accel/graph/op_shapes.h"
#include "accel/host/reference_ops.h"
#include "accel/import/onnx/onnx_importer.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace tessera {
namespace {

// One Conv node of the model at a batch size.
struct ConvShape {
  Shape x, w;  // NCHW input, OIHW weights
  ConvAttrs attrs;
  Shape y;
  int64_t macs() const { return y[0] * y[1] * y[2] * y[3] * w[1] * w[2] * w[3]; }
};

Result<std::vector<ConvShape>> conv_shapes(const std::filesystem::path& onnx, int64_t batch) {
  TESSERA_ASSIGN_OR_RETURN(const Graph graph, import_onnx_file(onnx));
  TESSERA_ASSIGN_OR_RETURN(const auto shapes, infer_shapes(graph, batch));
  std::vector<ConvShape> convs;
  for (const Node& node : graph.nodes) {
    if (node.op != OpKind::kConv) continue;
    const Tensor* w = graph.constant(node.inputs[1]);
    if (w == nullptr) return Status::invalid_argument(node.name + ": weights are not a constant");
    convs.push_back({shapes.at(node.inputs[0]), w->shape, std::get<ConvAttrs>(node.attrs), shapes.at(node.outputs[0])});
  }
  return convs;
}

// A conv primitive with its memories, ready to run.
struct ConvRun {
  dnnl::convolution_forward prim;
  std::unordered_map<int, dnnl::memory> args;
  std::string impl;
};

dnnl::memory filled(const dnnl::memory::desc& desc, const dnnl::engine& eng, std::mt19937& rng) {
  dnnl::memory m(desc, eng);
  auto* bytes = static_cast<uint8_t*>(m.get_data_handle());
  const bool is_float = desc.data_type() == dnnl::memory::data_type::f32;
  const size_t size = desc.get_size();
  if (is_float) {
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (size_t i = 0; i < size / sizeof(float); ++i) reinterpret_cast<float*>(bytes)[i] = dist(rng);
  } else {
    for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<uint8_t>(rng() % 128);  // valid for u8 and s8
  }
  return m;
}

ConvRun make_conv(const ConvShape& c, bool int8, const dnnl::engine& eng, std::mt19937& rng) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  const int64_t g = c.attrs.group;
  const dnnl::memory::dims src{c.x[0], c.x[1], c.x[2], c.x[3]}, dst{c.y[0], c.y[1], c.y[2], c.y[3]};
  const dnnl::memory::dims wei = g == 1 ? dnnl::memory::dims{c.w[0], c.w[1], c.w[2], c.w[3]}
                                        : dnnl::memory::dims{g, c.w[0] / g, c.w[1], c.w[2], c.w[3]};
  const dnnl::memory::dims strides{c.attrs.stride[0], c.attrs.stride[1]};
  // oneDNN counts dilation from 0 (no dilation), ONNX from 1.
  const dnnl::memory::dims dilation{c.attrs.dilation[0] - 1, c.attrs.dilation[1] - 1};
  const dnnl::memory::dims pad_l{c.attrs.pads[0], c.attrs.pads[1]}, pad_r{c.attrs.pads[2], c.attrs.pads[3]};
  const dnnl::memory::desc src_md(src, int8 ? dt::u8 : dt::f32, tag::any);
  const dnnl::memory::desc wei_md(wei, int8 ? dt::s8 : dt::f32, tag::any);
  const dnnl::memory::desc dst_md(dst, int8 ? dt::s32 : dt::f32, tag::any);
  const dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                             src_md, wei_md, dst_md, strides, dilation, pad_l, pad_r);
  const dnnl::convolution_forward::primitive_desc pd(desc, eng);
  ConvRun run{dnnl::convolution_forward(pd), {}, pd.impl_info_str()};
  run.args[DNNL_ARG_SRC] = filled(pd.src_desc(), eng, rng);
  run.args[DNNL_ARG_WEIGHTS] = filled(pd.weights_desc(), eng, rng);
  run.args[DNNL_ARG_DST] = dnnl::memory(pd.dst_desc(), eng);
  return run;
}

// One conv ready to run on its inputs; `seconds` sums the time of its timed runs.
struct Layer {
  std::function<void()> run;
  std::string impl;
  double seconds = 0;
};

// Timed iterations (each runs every layer once) and their rate.
struct Timing {
  int iterations = 0;
  double per_second = 0;
};

// Runs every layer once per iteration for about `seconds` (at least 3 iterations), timing each.
Timing time_layers(std::vector<Layer>& layers, double seconds) {
  for (auto& l : layers) l.run();  // warm-up
  const auto start = std::chrono::steady_clock::now();
  const auto until = start + std::chrono::duration<double>(seconds);
  int iterations = 0;
  while (iterations < 3 || std::chrono::steady_clock::now() < until) {
    for (auto& l : layers) {
      const auto t0 = std::chrono::steady_clock::now();
      l.run();
      l.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    ++iterations;
  }
  return {iterations, iterations / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
}

// The conv through Tessera's fp32 host path (host::conv2d: oneDNN where built in, with its
// reorders and the host's thread split), on random inputs.
Layer tessera_layer(const ConvShape& c, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  auto random = [&](const Shape& shape) {
    auto t = std::make_shared<Tensor>(shape);
    for (float& v : t->data) v = dist(rng);
    return t;
  };
  auto x = random(c.x), w = random(c.w), b = random({c.w[0]});
  return {[x, w, b, attrs = c.attrs] {
            if (!host::conv2d(*x, *w, b.get(), attrs).is_ok()) std::abort();
          },
          "tessera-fp32"};
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> parts;
  std::stringstream in(list);
  for (std::string part; std::getline(in, part, ',');) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

// What one run measures: the path, its precision, and whether to print each layer.
struct BenchSpec {
  std::string path;  // "onednn" | "tessera"
  bool int8 = true;
  bool per_layer = false;
  double seconds = 3;
};

void print_layers(const std::string& name, int64_t batch, const std::vector<ConvShape>& shapes,
                  const std::vector<Layer>& layers, int iterations) {
  for (size_t i = 0; i < layers.size(); ++i) {
    const ConvShape& c = shapes[i];
    const double ms = layers[i].seconds / iterations * 1e3;  // per run of the layer
    std::printf("  %-14s %3lld %3zu  %4lldx%-3lld -> %4lldx%-3lld k%lldx%lld s%d g%-4d %8.3f ms %8.1f GMAC/s\n",
                name.c_str(), static_cast<long long>(batch), i, static_cast<long long>(c.x[1]),
                static_cast<long long>(c.x[2]), static_cast<long long>(c.y[1]), static_cast<long long>(c.y[2]),
                static_cast<long long>(c.w[2]), static_cast<long long>(c.w[3]), c.attrs.stride[0], c.attrs.group, ms,
                static_cast<double>(c.macs()) / (ms * 1e6));
  }
}

int bench_model(const std::filesystem::path& zoo, const std::string& name, int64_t batch, const BenchSpec& spec) {
  auto shapes = conv_shapes(zoo / name / "model.onnx", batch);
  if (!shapes) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), shapes.status().to_string().c_str());
    return 1;
  }
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(eng);
  std::mt19937 rng(26);
  std::vector<ConvRun> convs;
  convs.reserve(shapes->size());
  std::vector<Layer> layers;
  std::map<std::string, int> impls;  // implementation -> how many convs use it
  int64_t macs = 0;
  for (const ConvShape& c : *shapes) {
    if (spec.path == "tessera") {
      layers.push_back(tessera_layer(c, rng));
    } else {
      ConvRun& conv = convs.emplace_back(make_conv(c, spec.int8, eng, rng));
      layers.push_back({[&conv, &stream] {
                          conv.prim.execute(stream, conv.args);
                          stream.wait();
                        },
                        conv.impl});
    }
    ++impls[layers.back().impl];
    macs += c.macs();
  }
  const Timing timing = time_layers(layers, spec.seconds);
  const double per_second = timing.per_second;
  std::string impl_list;
  for (const auto& [impl, count] : impls) {
    impl_list += (impl_list.empty() ? "" : ",") + impl + "x" + std::to_string(count);
  }
  std::printf("%-14s %-5s %6lld %12.1f %10.1f %6zu   %s\n", name.c_str(), spec.int8 ? "int8" : "fp32",
              static_cast<long long>(batch), per_second * static_cast<double>(batch),
              per_second * static_cast<double>(macs) / 1e9, layers.size(), impl_list.c_str());
  if (spec.per_layer) print_layers(name, batch, *shapes, layers, timing.iterations);
  std::fflush(stdout);
  return 0;
}

int run(int argc, char** argv) {
  std::filesystem::path zoo;
  std::string models = "squeezenet1_1,resnet18,googlenet,mobilenet_v2,alexnet", precision = "int8", batches = "1,8";
  BenchSpec spec{"onednn"};
  int threads = 2;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i], value = i + 1 < argc ? argv[i + 1] : "";
    if (flag == "--per-layer") {
      spec.per_layer = true;
      continue;
    }
    if (flag == "--zoo") zoo = value;
    if (flag == "--models") models = value;
    if (flag == "--precision") precision = value;
    if (flag == "--path") spec.path = value;
    if (flag == "--batches") batches = value;
    if (flag == "--seconds") spec.seconds = std::atof(value.c_str());
    if (flag == "--threads") threads = std::atoi(value.c_str());
    ++i;
  }
  spec.int8 = precision == "int8";
  if (zoo.empty() || (precision != "int8" && precision != "fp32") || threads < 1 ||
      (spec.path != "onednn" && spec.path != "tessera") || (spec.path == "tessera" && spec.int8)) {
    std::fprintf(stderr,
                 "usage: tessera_onednn_bench --zoo DIR [--models a,b] [--precision int8|fp32] [--threads N]\n"
                 "                            [--seconds S] [--batches 1,8] [--path onednn|tessera] [--per-layer]\n"
                 "--path tessera (fp32 only) runs Tessera's fp32 host conv (host::conv2d) instead of bare oneDNN\n");
    return 2;
  }
  omp_set_num_threads(threads);
  const dnnl_version_t* version = dnnl_version();
  if (spec.path == "tessera") {
    std::printf("Tessera's fp32 host conv (oneDNN %d.%d.%d inside where built in; the host's thread budget)\n",
                version->major, version->minor, version->patch);
  } else {
    std::printf("oneDNN %d.%d.%d, %d threads, %s convolutions (u8 x s8 -> s32 for int8)\n", version->major,
                version->minor, version->patch, threads, precision.c_str());
  }
  std::printf("%-14s %-5s %6s %12s %10s %6s   %s\n", "model", "dtype", "batch", "images/s", "GMAC/s", "convs",
              "implementation x convs");
  for (const std::string& name : split(models)) {
    if (!std::filesystem::exists(zoo / name / "model.onnx")) {
      std::fprintf(stderr, "tessera_onednn_bench: no %s in %s (skipped)\n", name.c_str(), zoo.string().c_str());
      continue;
    }
    for (const std::string& b : split(batches)) {
      if (bench_model(zoo, name, std::atoll(b.c_str()), spec) != 0) return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  try {
    return tessera::run(argc, argv);
  } catch (const dnnl::error& e) {
    std::fprintf(stderr, "tessera_onednn_bench: oneDNN: %s (status %d)\n", e.what(), static_cast<int>(e.status));
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tessera_onednn_bench: %s\n", e.what());
    return 1;
  } catch (...) {
    std::fprintf(stderr, "tessera_onednn_bench: unknown exception\n");
    return 1;
  }
}
