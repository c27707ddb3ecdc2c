#include "server/models/model_folder.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <exception>
#include <system_error>

namespace tessera {
namespace fs = std::filesystem;

namespace {

// The device instances a model's [instances] picks from the daemon's `all` (all of them unless it
// says otherwise). INVALID_ARGUMENT when it names more, or other, devices than the daemon has.
Result<std::vector<std::shared_ptr<DeviceSupervisor>>> pick_devices(
    const InstancesConfig& wanted, const std::vector<std::shared_ptr<DeviceSupervisor>>& all) {
  if (wanted.count) {
    if (*wanted.count > all.size()) {
      return Status::invalid_argument("[instances] count = " + std::to_string(*wanted.count) + " but the daemon has " +
                                      std::to_string(all.size()) + " device(s) (--devices)");
    }
    return std::vector<std::shared_ptr<DeviceSupervisor>>(all.begin(), all.begin() + *wanted.count);
  }
  if (wanted.devices.empty()) return all;
  std::vector<std::shared_ptr<DeviceSupervisor>> picked;
  for (unsigned index : wanted.devices) {
    auto it = std::find_if(all.begin(), all.end(), [&](const auto& d) { return d->index() == index; });
    if (it == all.end()) {
      std::string have;
      for (const auto& d : all) have += (have.empty() ? "" : ",") + std::to_string(d->index());
      return Status::invalid_argument("[instances] devices names device " + std::to_string(index) +
                                      ", which the daemon does not drive (--devices " + have + ")");
    }
    picked.push_back(*it);
  }
  return picked;
}

// One version: `config` (model.toml read against the version's files) on an engine.
Result<std::unique_ptr<ServedModel>> load_version(const ModelConfig& config, int64_t version,
                                                  EngineOptions engine_options, BatchPolicy batching) {
  const BatchingConfig& b = config.batching;
  batching.max_batch = b.max_batch.value_or(batching.max_batch);
  batching.max_queue_delay_us = b.max_queue_delay_us.value_or(batching.max_queue_delay_us);
  batching.max_queue = b.max_queue.value_or(batching.max_queue);
  engine_options.max_batch = batching.max_batch;
  if (!config.precision.empty()) {
    TESSERA_ASSIGN_OR_RETURN(engine_options.precision, parse_precision(config.precision));
    if (engine_options.precision == Precision::kInt8 && !engine_options.device) {
      return Status::invalid_argument("precision \"int8\" needs a device");
    }
  }
  if (!engine_options.instances.empty()) {
    TESSERA_ASSIGN_OR_RETURN(engine_options.instances, pick_devices(config.instances, engine_options.instances));
  }
  TESSERA_ASSIGN_OR_RETURN(auto engine, Engine::load(config, engine_options));
  auto model = std::make_unique<ServedModel>();
  model->engine = std::move(engine);
  model->batching = batching;
  model->version = version;
  model->precision = precision_name(engine_options.precision);
  model->device = engine_options.precision == Precision::kInt8 ? engine_options.device->info().kind : "host";
  for (const DeviceSupervisor* instance : model->engine->instances()) model->devices.push_back(instance->index());
  return model;
}

// The folder's numbered subfolders (its versions), in order; empty when it has none.
std::vector<int64_t> numbered_subfolders(const fs::path& dir) {
  std::vector<int64_t> versions;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    int64_t number = 0;
    const auto [end, parsed] = std::from_chars(name.data(), name.data() + name.size(), number);
    if (entry.is_directory() && parsed == std::errc() && end == name.data() + name.size() && number > 0) {
      versions.push_back(number);
    }
  }
  std::sort(versions.begin(), versions.end());
  return versions;
}

// The versions `policy` serves out of `present`; INVALID_ARGUMENT for a specific one not there.
Result<std::vector<int64_t>> served_versions(const VersionPolicy& policy, const std::vector<int64_t>& present) {
  if (policy.specific.empty()) {
    const size_t n = std::min<size_t>(policy.latest, present.size());
    return std::vector<int64_t>(present.end() - static_cast<std::ptrdiff_t>(n), present.end());
  }
  for (int64_t version : policy.specific) {
    if (!std::binary_search(present.begin(), present.end(), version)) {
      return Status::invalid_argument("[version_policy] specific names version " + std::to_string(version) +
                                      ", which has no folder");
    }
  }
  std::vector<int64_t> versions = policy.specific;
  std::sort(versions.begin(), versions.end());
  return versions;
}

}  // namespace

Result<std::vector<fs::path>> model_folders(const fs::path& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return Status::not_found("models directory " + root.string() + " does not exist");
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (entry.is_directory() && fs::exists(entry.path() / "model.toml")) dirs.push_back(entry.path());
  }
  if (ec) return Status::internal("cannot list " + root.string() + ": " + ec.message());
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

std::string folder_model_name(const fs::path& dir) {
  auto name = read_model_name(dir);
  return name ? *name : dir.filename().string();
}

fs::file_time_type newest_change(const fs::path& dir) {
  std::error_code ec;
  fs::file_time_type newest = fs::last_write_time(dir, ec);
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    std::error_code time_ec;
    const auto time = fs::last_write_time(it->path(), time_ec);
    if (!time_ec) newest = std::max(newest, time);
  }
  return newest;
}

Result<std::vector<std::shared_ptr<const ServedModel>>> load_model_folder(const fs::path& dir,
                                                                          const EngineOptions& engine_options,
                                                                          const BatchPolicy& batching) {
  auto fail = [&](const Status& why) {
    return Status(why.code(), "model folder " + dir.string() + ": " + why.message());
  };
  try {
    auto config = load_model_config(dir);
    const std::vector<int64_t> present = numbered_subfolders(dir);
    std::vector<std::pair<int64_t, fs::path>> versions;
    if (present.empty()) {
      if (!config) return fail(config.status());
      versions.emplace_back(1, dir);
    } else {
      auto policy = read_version_policy(dir);
      if (!policy) return fail(policy.status());
      auto served = served_versions(*policy, present);
      if (!served) return fail(served.status());
      for (int64_t v : *served) versions.emplace_back(v, dir / std::to_string(v));
    }
    std::vector<std::shared_ptr<const ServedModel>> loaded;
    for (const auto& [version, files] : versions) {
      // Unversioned: the folder's own config (one pass); versioned: read against the version's files.
      auto version_config = present.empty() ? config : load_model_config(dir, files);
      if (!version_config) return fail(version_config.status());
      auto model = load_version(*version_config, version, engine_options, batching);
      if (!model) return fail(model.status());
      const BatchPolicy& b = (*model)->batching;
      spdlog::info(
          "loaded model '{}' version {} from {} ({} classes, input {}x{}x{}; batch <= {}, queue delay {} us, queue "
          "{}); "
          "{}",
          (*model)->name(), version, files.string(), (*model)->num_classes(), version_config->input.channels,
          version_config->input.height, version_config->input.width, b.max_batch, b.max_queue_delay_us, b.max_queue,
          (*model)->engine->summary());
      loaded.push_back(std::move(model).value());
    }
    return loaded;
  } catch (const std::exception& e) {
    return fail(Status::internal(e.what()));
  }
}

}  // namespace tessera
