// tessera eval: top-1 and top-5 accuracy of a model folder on a labelled dataset, offline (no
// daemon), through the same Engine, preprocessing and device the daemon uses; per class, and the
// confusion matrix with --json. A progress bar on stderr when it is a terminal.
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <numeric>

#include "accel/device/device_registry.h"
#include "accel/image/preprocess.h"
#include "accel/runtime/engine.h"
#include "client/commands/commands.h"
#include "client/commands/common.h"
#include "client/dataset/fashion_mnist.h"

namespace tessera::client {
namespace {

// What an evaluation counted: top-1/top-5 hits and the confusion matrix (row: the label, column:
// the top-1 answer).
struct EvalCounts {
  size_t images = 0;
  size_t top1 = 0;
  size_t top5 = 0;
  std::vector<std::vector<size_t>> confusion;

  explicit EvalCounts(size_t classes) : confusion(classes, std::vector<size_t>(classes, 0)) {}

  void add(const std::vector<float>& scores, int label) {
    std::vector<size_t> order(scores.size());
    std::iota(order.begin(), order.end(), 0);
    const size_t k = std::min<size_t>(5, order.size());
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                      [&](size_t a, size_t b) { return scores[a] > scores[b] || (scores[a] == scores[b] && a < b); });
    const auto truth = static_cast<size_t>(label);
    ++images;
    top1 += order[0] == truth;
    top5 += std::find(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), truth) !=
            order.begin() + static_cast<std::ptrdiff_t>(k);
    if (truth < confusion.size() && order[0] < confusion.size()) ++confusion[truth][order[0]];
  }
};

double percent(size_t part, size_t whole) {
  return whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

std::string label_of(const std::vector<std::string>& labels, size_t i) {
  return i < labels.size() ? labels[i] : std::to_string(i);
}

// Per class: images, top-1 hits, accuracy.
nlohmann::json per_class_json(const EvalCounts& counts, const std::vector<std::string>& labels) {
  nlohmann::json rows = nlohmann::json::array();
  for (size_t c = 0; c < counts.confusion.size(); ++c) {
    const size_t n = std::accumulate(counts.confusion[c].begin(), counts.confusion[c].end(), size_t{0});
    rows.push_back({{"index", c},
                    {"label", label_of(labels, c)},
                    {"images", n},
                    {"correct", counts.confusion[c][c]},
                    {"accuracy", percent(counts.confusion[c][c], n) / 100.0}});
  }
  return rows;
}

void print_text(const EvalCounts& counts, const std::vector<std::string>& labels, const char* precision,
                double seconds) {
  std::printf("top-1: %.2f%% (%zu/%zu), top-5: %.2f%% (%zu/%zu), %s, %.1f images/s\n",
              percent(counts.top1, counts.images), counts.top1, counts.images, percent(counts.top5, counts.images),
              counts.top5, counts.images, precision, static_cast<double>(counts.images) / seconds);
  for (const auto& row : per_class_json(counts, labels)) {
    std::printf("  %-24s %6.2f%% (%zu/%zu)\n", row["label"].get<std::string>().c_str(),
                row["accuracy"].get<double>() * 100.0, row["correct"].get<size_t>(), row["images"].get<size_t>());
  }
}

void print_json(const EvalCounts& counts, const EvalArgs& args, const ModelConfig& config, const char* precision,
                const std::string& engine, double seconds) {
  const nlohmann::json out = {
      {"model", config.name},
      {"model_dir", args.model_dir},
      {"engine", engine},
      {"dataset", args.dataset},
      {"precision", precision},
      {"images", counts.images},
      {"top1", {{"correct", counts.top1}, {"accuracy", percent(counts.top1, counts.images) / 100.0}}},
      {"top5", {{"correct", counts.top5}, {"accuracy", percent(counts.top5, counts.images) / 100.0}}},
      {"per_class", per_class_json(counts, config.labels)},
      {"confusion", counts.confusion},
      {"seconds", seconds},
      {"images_per_second", static_cast<double>(counts.images) / seconds}};
  std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

}  // namespace

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
  cmd->add_flag("--json", args.json, "print the result as one JSON object (top-1, top-5, per class, confusion)");
  cmd->add_flag("--no-progress,--quiet", args.no_progress, "no progress bar (drawn only when stderr is a terminal)");
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
    device_options.xrt.xclbin = args.xclbin;
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
  if (!args.json) {
    std::printf("model %s (%s), %zu images of %s\n", config->name.c_str(), (*engine)->summary().c_str(), count,
                args.dataset.c_str());
    std::fflush(stdout);
  }
  const bool progress = !args.no_progress && is_tty(STDERR_FILENO);

  const auto start = std::chrono::steady_clock::now();
  EvalCounts counts(std::max(config->labels.size(), size_t{10}));
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
    for (size_t i = 0; i < n; ++i) counts.add(result->scores[i], data->labels[first + i]);
    if (progress) draw_progress(first + n, count, 0);
  }
  if (progress) std::fprintf(stderr, "\n");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (args.json) {
    print_json(counts, args, *config, precision_name(*precision), (*engine)->summary(), seconds);
  } else {
    print_text(counts, config->labels, precision_name(*precision), seconds);
  }
  return 0;
}

}  // namespace tessera::client
