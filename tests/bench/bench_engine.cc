// tessera_bench: images/s of Tessera's engines on one machine, in one run — the int8 path
// (emulated fabric + host FC) and the fp32 host path, at batch 1 and 8, on the bundled model and
// zoo models (SqueezeNet 1.1 and ResNet-18 unless --models names others); and int8 pipelined
// (fabric || host stages) against sequential. A benchmark, not a test: run it with
// tests/bench/run_bench.sh, which also runs OpenCV's DNN module and oneDNN on the same models.
//
// Usage: tessera_bench --zoo DIR [--families DIR] --bundled DIR [--seconds S]
//                      [--only NAME | --models a,b,...] [--precision int8|fp32] [--batches 1,8]
// --families: tools/make_families.py's folder; its families (opset 17) can be named as models.
// --precision runs one precision's rows only, without the pipeline table; --batches the batch
// sizes (default 1,8): for profiling one configuration (perf, TESSERA_EMU_PROFILE).
// --models names the zoo models to run after the bundled one (default squeezenet1_1,resnet18);
// --only runs one model, fashion-mnist (needs no --zoo) or any model of the zoo (e.g. mobilenet_v2,
// whose depthwise layers take the emulator's direct path); run_server_bench.sh uses it to put the
// bare engine beside tesserad over gRPC on the same model.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "accel/device/device_registry.h"
#include "accel/runtime/engine.h"
#include "tests/common/model_folder_files.h"

namespace tessera {
namespace {

struct BenchModel {
  std::string name;
  std::filesystem::path dir;  // a folder with model.toml
  Tensor sample;              // one preprocessed image, 1 x C x H x W
  std::vector<Tensor> calibration;
};

Tensor repeat(const Tensor& one, int64_t n) {
  Tensor t({n, one.dim(1), one.dim(2), one.dim(3)});
  for (int64_t i = 0; i < n; ++i) std::copy(one.data.begin(), one.data.end(), t.data.begin() + i * one.elements());
  return t;
}

std::vector<float> read_floats(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  std::vector<float> v(static_cast<size_t>(in.tellg()) / sizeof(float));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  return v;
}

// Where a named model's files are: a zoo model (tools/make_zoo.py: NAME/model.onnx, input.f32) or,
// with --families, a torchvision family (tools/make_families.py: NAME/opset17/model.onnx,
// inputs.f32); both say the input's shape in NAME/meta.json.
struct ModelFiles {
  std::filesystem::path onnx, inputs;
  int64_t images = 0, side = 0;
};

std::optional<ModelFiles> find_model(const std::filesystem::path& zoo, const std::filesystem::path& families,
                                     const std::string& name) {
  ModelFiles f;
  nlohmann::json meta;
  if (!families.empty() && std::filesystem::exists(families / name / "opset17" / "model.onnx")) {
    f.onnx = families / name / "opset17" / "model.onnx";
    f.inputs = families / name / "inputs.f32";
    meta = nlohmann::json::parse(std::ifstream(families / name / "meta.json"), nullptr, false);
    if (meta.is_discarded()) return std::nullopt;
    f.images = meta.value("count", int64_t{0});
  } else if (!zoo.empty() && std::filesystem::exists(zoo / name / "model.onnx")) {
    f.onnx = zoo / name / "model.onnx";
    f.inputs = zoo / name / "input.f32";
    meta = nlohmann::json::parse(std::ifstream(zoo / name / "meta.json"), nullptr, false);
    if (meta.is_discarded()) return std::nullopt;
    f.images = meta["input_shape"][0].get<int64_t>();
  } else {
    return std::nullopt;
  }
  f.side = meta["input_shape"][2].get<int64_t>();
  return f;
}

// A model as a model folder (model.toml + labels) in a temp dir; its first image is the sample,
// all its images the calibration set.
BenchModel folder_model(const std::string& name, const ModelFiles& files) {
  const auto dir = std::filesystem::temp_directory_path() / ("tessera-bench-" + name);
  std::filesystem::create_directories(dir);
  testing::place_in_model_folder(files.onnx, dir, "model.onnx");
  std::ofstream(dir / "model.toml") << "name = \"" << name
                                    << "\"\nfile = \"model.onnx\"\nlabels = \"labels.txt\"\n[input]\nwidth = "
                                    << files.side << "\nheight = " << files.side << "\nchannels = 3\n";
  std::ofstream labels(dir / "labels.txt");
  for (int i = 0; i < 1000; ++i) labels << "class" << i << "\n";
  Tensor all({files.images, 3, files.side, files.side}, read_floats(files.inputs));
  const int64_t one = 3 * files.side * files.side;
  Tensor first({1, 3, files.side, files.side}, std::vector<float>(all.data.begin(), all.data.begin() + one));
  return {name, dir, first, {all}};
}

BenchModel bundled_model(const std::filesystem::path& dir) {
  Tensor sample({1, 1, 28, 28});
  for (size_t i = 0; i < sample.data.size(); ++i) sample.data[i] = static_cast<float>((i * 37) % 255) / 255.0f;
  return {"fashion-mnist", dir, sample, {}};
}

// Runs `batch`-image inferences from `threads` callers for about `seconds`; images/s.
double throughput(const Engine& engine, const Tensor& batch, int threads, double seconds) {
  if (!engine.infer(batch).is_ok()) return 0;  // warm-up
  std::atomic<int64_t> images{0};
  std::atomic<bool> failed{false};
  const auto start = std::chrono::steady_clock::now();
  const auto until = start + std::chrono::duration<double>(seconds);
  std::vector<std::thread> callers;
  callers.reserve(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    callers.emplace_back([&] {
      int runs = 0;
      while (runs < 3 || std::chrono::steady_clock::now() < until) {
        if (!engine.infer(batch).is_ok()) {
          failed = true;
          return;
        }
        images += batch.dim(0);
        ++runs;
      }
    });
  }
  for (auto& c : callers) c.join();
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return failed ? 0 : static_cast<double>(images.load()) / elapsed;
}

std::unique_ptr<Engine> load(const BenchModel& m, Precision precision, bool pipelined, std::shared_ptr<Device> device) {
  auto config = load_model_config(m.dir);
  if (!config) {
    std::fprintf(stderr, "%s: %s\n", m.name.c_str(), config.status().to_string().c_str());
    return nullptr;
  }
  EngineOptions options;
  options.precision = precision;
  options.pipelined = pipelined;
  options.max_batch = 8;
  options.calibration_samples = m.calibration;
  if (precision == Precision::kInt8) options.device = std::move(device);
  auto engine = Engine::load(*config, options);
  if (!engine) {
    std::fprintf(stderr, "%s: %s\n", m.name.c_str(), engine.status().to_string().c_str());
    return nullptr;
  }
  return std::move(engine).value();
}

// Appends the models named in the comma-separated `names`; false (said) when one is missing.
bool add_models(const std::filesystem::path& zoo, const std::filesystem::path& families, const std::string& names,
                std::vector<BenchModel>& models) {
  std::stringstream list(names);
  for (std::string name; std::getline(list, name, ',');) {
    if (name.empty()) continue;
    const auto files = find_model(zoo, families, name);
    if (!files) {
      std::fprintf(stderr, "tessera_bench: no model named %s in %s%s%s\n", name.c_str(), zoo.string().c_str(),
                   families.empty() ? "" : " or ", families.string().c_str());
      return false;
    }
    models.push_back(folder_model(name, *files));
  }
  return true;
}

// The int8 pipeline against the sequential engine, batch 8, two callers; 1 when a model fails to load.
int pipeline_table(const std::vector<BenchModel>& models, const std::shared_ptr<Device>& device, double seconds) {
  std::printf("\nint8 pipeline (fabric stage || host stage), batch 8, 2 concurrent callers:\n");
  std::printf("%-14s %14s %14s\n", "model", "sequential", "pipelined");
  for (const BenchModel& m : models) {
    auto sequential = load(m, Precision::kInt8, false, device);
    auto pipelined = load(m, Precision::kInt8, true, device);
    if (!sequential || !pipelined) return 1;
    const Tensor batch = repeat(m.sample, 8);
    const double s = throughput(*sequential, batch, 2, seconds);
    const double p = throughput(*pipelined, batch, 2, seconds);
    std::printf("%-14s %14.1f %14.1f\n", m.name.c_str(), s, p);
    std::fflush(stdout);
  }
  return 0;
}

// The command line: paths, what to run and for how long.
struct BenchArgs {
  std::filesystem::path zoo, bundled, families;
  std::string only, zoo_models = "squeezenet1_1,resnet18", precision_only;
  std::vector<Precision> precisions;
  std::vector<int64_t> batches;
  double seconds = 3;
};

BenchArgs parse_args(int argc, char** argv) {
  BenchArgs a;
  std::string batch_list = "1,8";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--zoo"))
      a.zoo = argv[i + 1];
    else if (!std::strcmp(argv[i], "--bundled"))
      a.bundled = argv[i + 1];
    else if (!std::strcmp(argv[i], "--families"))
      a.families = argv[i + 1];
    else if (!std::strcmp(argv[i], "--seconds"))
      a.seconds = std::atof(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--only"))
      a.only = argv[i + 1];
    else if (!std::strcmp(argv[i], "--models"))
      a.zoo_models = argv[i + 1];
    else if (!std::strcmp(argv[i], "--precision"))
      a.precision_only = argv[i + 1];
    else if (!std::strcmp(argv[i], "--batches"))
      batch_list = argv[i + 1];
  }
  if (a.precision_only != "fp32") a.precisions.push_back(Precision::kInt8);
  if (a.precision_only != "int8") a.precisions.push_back(Precision::kFp32);
  std::stringstream batch_items(batch_list);
  for (std::string b; std::getline(batch_items, b, ',');) {
    if (!b.empty()) a.batches.push_back(std::clamp<int64_t>(std::atoll(b.c_str()), 1, 8));  // the engines' max_batch
  }
  return a;
}

int run(int argc, char** argv) {
  const BenchArgs args = parse_args(argc, argv);
  const std::filesystem::path &zoo = args.zoo, &bundled = args.bundled;
  const std::string& only = args.only;
  if (bundled.empty() || (zoo.empty() && args.families.empty() && only != "fashion-mnist")) {
    std::fprintf(
        stderr,
        "usage: tessera_bench --zoo DIR [--families DIR] --bundled DIR [--seconds S] [--only NAME | --models a,b] "
        "[--precision int8|fp32] [--batches 1,8]\n");
    return 2;
  }
  DeviceOptions device_options;
  device_options.kind = "emu";
  auto device_result = open_device(device_options);
  if (!device_result) {
    std::fprintf(stderr, "%s\n", device_result.status().to_string().c_str());
    return 1;
  }
  std::shared_ptr<Device> device = std::move(device_result).value();
  std::printf("device: %s; %u hardware threads\n\n", device->info().name.c_str(), std::thread::hardware_concurrency());

  std::vector<BenchModel> models = {bundled_model(bundled)};
  if (only.empty()) {
    if (!add_models(zoo, args.families, args.zoo_models, models)) return 2;
  } else if (only != "fashion-mnist") {
    if (!add_models(zoo, args.families, only, models)) return 2;
  }
  if (!only.empty()) {
    std::erase_if(models, [&](const BenchModel& m) { return m.name != only; });
    if (models.empty()) {
      std::fprintf(stderr, "tessera_bench: no model named %s\n", only.c_str());
      return 2;
    }
  }
  std::printf("%-14s %-9s %6s %12s   %s\n", "model", "path", "batch", "images/s",
              "one batch: fabric ms (modeled) / host ms");
  for (const BenchModel& m : models) {
    for (Precision precision : args.precisions) {
      auto engine = load(m, precision, true, device);
      if (!engine) return 1;
      for (int64_t batch : args.batches) {
        const Tensor input = repeat(m.sample, batch);
        const double ips = throughput(*engine, input, 1, args.seconds);
        auto one = engine->infer(input);
        if (ips <= 0) {  // a model that cannot run this batch (an export with its batch baked in)
          std::printf("%-14s %-9s %6lld %12s   %s\n", m.name.c_str(),
                      precision == Precision::kInt8 ? "int8-emu" : "fp32-host", static_cast<long long>(batch), "failed",
                      one ? "" : one.status().to_string().c_str());
          continue;
        }
        std::printf("%-14s %-9s %6lld %12.1f   %.2f (%.2f) / %.2f\n", m.name.c_str(),
                    precision == Precision::kInt8 ? "int8-emu" : "fp32-host", static_cast<long long>(batch), ips,
                    one ? static_cast<double>(one->fabric_us) / 1000 : 0.0,
                    one ? static_cast<double>(one->modeled_fabric_us) / 1000 : 0.0,
                    one ? static_cast<double>(one->host_us) / 1000 : 0.0);
        std::fflush(stdout);
      }
    }
  }
  if (!args.precision_only.empty()) return 0;
  return pipeline_table(models, device, args.seconds);
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  try {
    return tessera::run(argc, argv);
  } catch (const std::exception& e) {  // a malformed meta.json
    std::fprintf(stderr, "tessera_bench: %s\n", e.what());
    return 1;
  }
}
