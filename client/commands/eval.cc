// tessera eval: top-1 accuracy of a model folder on a labelled dataset, offline (no daemon),
// through the same Engine, preprocessing and device the daemon uses.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "accel/device/device_registry.h"
#include "accel/image/preprocess.h"
#include "accel/runtime/engine.h"
#include "client/commands/commands.h"
#include "client/dataset/fashion_mnist.h"

namespace tessera::client {

CLI::App* add_eval_command(CLI::App& app, EvalArgs& args) {
  CLI::App* cmd = app.add_subcommand("eval", "top-1 accuracy of a model on a dataset (offline, no daemon)");
  cmd->add_option("--model", args.model_dir, "model folder (with model.toml)")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--dataset", args.dataset, "dataset: fashion-mnist")->check(CLI::IsMember({"fashion-mnist"}));
  cmd->add_option("--data-dir", args.data_dir, "where the dataset's files are");
  cmd->add_option("--precision", args.precision, "fp32 (host float path) or int8 (fabric + host)")
      ->check(CLI::IsMember({"fp32", "int8"}));
  cmd->add_option("--device", args.device, "int8 device: auto, emu or xrt");
  cmd->add_option("--xclbin", args.xclbin, "accelerator binary for --device xrt/auto");
  cmd->add_option("--limit", args.limit, "evaluate only the first N images (0: all)");
  cmd->add_option("--batch", args.batch, "images per batch")->check(CLI::Range(1, 256));
  return cmd;
}

int run_eval(const EvalArgs& args) {
  auto config = load_model_config(args.model_dir);
  if (!config) {
    std::fprintf(stderr, "tessera eval: %s\n", config.status().to_string().c_str());
    return 1;
  }
  auto precision = parse_precision(args.precision);
  if (!precision) {
    std::fprintf(stderr, "tessera eval: %s\n", precision.status().message().c_str());
    return 1;
  }
  EngineOptions options;
  options.precision = *precision;
  options.max_batch = static_cast<uint32_t>(args.batch);
  if (*precision == Precision::kInt8) {
    DeviceOptions device_options;
    device_options.kind = args.device;
    device_options.xclbin = args.xclbin;
    std::string note;
    auto device = open_device(device_options, &note);
    if (!device) {
      std::fprintf(stderr, "tessera eval: %s\n", device.status().to_string().c_str());
      return 1;
    }
    if (!note.empty()) std::fprintf(stderr, "%s\n", note.c_str());
    options.device = std::move(device).value();
  }
  auto engine = Engine::load(*config, options);
  if (!engine) {
    std::fprintf(stderr, "tessera eval: %s\n", engine.status().to_string().c_str());
    return 1;
  }
  auto data = load_fashion_mnist(args.data_dir, "t10k");
  if (!data) {
    std::fprintf(stderr, "tessera eval: %s\n", data.status().to_string().c_str());
    return 1;
  }
  size_t count = data->images.size();
  if (args.limit > 0) count = std::min(count, static_cast<size_t>(args.limit));
  const PreprocessConfig& in = (*engine)->config().input;
  const int64_t per_image = static_cast<int64_t>(in.channels) * in.height * in.width;
  std::printf("model %s (%s), %zu images of %s\n", config->name.c_str(), (*engine)->summary().c_str(), count,
              args.dataset.c_str());

  const auto start = std::chrono::steady_clock::now();
  size_t correct = 0;
  const auto batch_size = static_cast<size_t>(args.batch);
  for (size_t first = 0; first < count; first += batch_size) {
    const size_t n = std::min(batch_size, count - first);
    Tensor batch({static_cast<int64_t>(n), in.channels, in.height, in.width});
    for (size_t i = 0; i < n; ++i) {
      Status s = preprocess_into(data->images[first + i], in, batch.ptr() + static_cast<int64_t>(i) * per_image);
      if (!s.is_ok()) {
        std::fprintf(stderr, "tessera eval: image %zu: %s\n", first + i, s.to_string().c_str());
        return 1;
      }
    }
    auto result = (*engine)->infer(batch);
    if (!result) {
      std::fprintf(stderr, "tessera eval: %s\n", result.status().to_string().c_str());
      return 1;
    }
    for (size_t i = 0; i < n; ++i) {
      const auto& row = result->scores[i];
      const auto top = std::max_element(row.begin(), row.end()) - row.begin();
      correct += top == data->labels[first + i];
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("top-1: %.2f%% (%zu/%zu), %s, %.1f images/s\n",
              100.0 * static_cast<double>(correct) / static_cast<double>(count), correct, count,
              precision_name(*precision), static_cast<double>(count) / seconds);
  return 0;
}

}  // namespace tessera::client
