#include "server/models/model_repository.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <set>

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

// Loads one model folder; errors say which folder.
Result<std::unique_ptr<ServedModel>> load_model(const fs::path& dir, EngineOptions engine_options,
                                                BatchPolicy batching) {
  auto fail = [&](const Status& why) {
    return Status(why.code(), "model folder " + dir.string() + ": " + why.message());
  };
  try {
    auto config = load_model_config(dir);
    if (!config) return fail(config.status());
    const BatchingConfig& b = config->batching;
    batching.max_batch = b.max_batch.value_or(batching.max_batch);
    batching.max_queue_delay_us = b.max_queue_delay_us.value_or(batching.max_queue_delay_us);
    batching.max_queue = b.max_queue.value_or(batching.max_queue);
    engine_options.max_batch = batching.max_batch;
    if (!config->precision.empty()) {
      TESSERA_ASSIGN_OR_RETURN(engine_options.precision, parse_precision(config->precision));
      if (engine_options.precision == Precision::kInt8 && !engine_options.device) {
        return fail(Status::invalid_argument("precision \"int8\" needs a device"));
      }
    }
    if (!engine_options.instances.empty()) {
      auto picked = pick_devices(config->instances, engine_options.instances);
      if (!picked) return fail(picked.status());
      engine_options.instances = std::move(picked).value();
    }
    auto engine = Engine::load(*config, engine_options);
    if (!engine) return fail(engine.status());
    auto model = std::make_unique<ServedModel>();
    model->engine = std::move(engine).value();
    model->batching = batching;
    model->precision = precision_name(engine_options.precision);
    model->device = engine_options.precision == Precision::kInt8 ? engine_options.device->info().kind : "host";
    for (const DeviceSupervisor* instance : model->engine->instances()) model->devices.push_back(instance->index());
    return model;
  } catch (const std::exception& e) {
    return fail(Status::internal(e.what()));
  }
}

}  // namespace

Result<std::unique_ptr<ModelRepository>> ModelRepository::load(const fs::path& root,
                                                               const EngineOptions& engine_options,
                                                               const BatchPolicy& batching) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    return Status::not_found("models directory " + root.string() + " does not exist");
  }
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (entry.is_directory() && fs::exists(entry.path() / "model.toml")) dirs.push_back(entry.path());
  }
  if (ec) return Status::internal("cannot list " + root.string() + ": " + ec.message());
  if (dirs.empty()) {
    return Status::not_found("no models in " + root.string() + " (no subfolder holds a model.toml)");
  }
  std::sort(dirs.begin(), dirs.end());

  std::vector<std::unique_ptr<ServedModel>> models;
  std::set<std::string> names;
  for (const auto& dir : dirs) {
    auto model = load_model(dir, engine_options, batching);
    if (!model) return model.status();
    const std::string& name = (*model)->name();
    if (!names.insert(name).second) {
      return Status::invalid_argument("model folder " + dir.string() +
                                      ": another folder already serves a model named '" + name + "'");
    }
    const BatchPolicy& b = (*model)->batching;
    spdlog::info("loaded model '{}' from {} ({} classes, input {}x{}x{}; batch <= {}, queue delay {} us, queue {}); {}",
                 name, dir.string(), (*model)->num_classes(), (*model)->config().input.channels,
                 (*model)->config().input.height, (*model)->config().input.width, b.max_batch, b.max_queue_delay_us,
                 b.max_queue, (*model)->engine->summary());
    models.push_back(std::move(model).value());
  }
  std::vector<std::shared_ptr<DeviceSupervisor>> devices = engine_options.instances;
  if (devices.empty() && engine_options.supervisor) devices.push_back(engine_options.supervisor);
  return std::make_unique<ModelRepository>(std::move(models), std::move(devices));
}

ModelRepository::ModelRepository(std::vector<std::unique_ptr<ServedModel>> models,
                                 std::vector<std::shared_ptr<DeviceSupervisor>> devices)
    : models_(std::move(models)), devices_(std::move(devices)) {}

Status ModelRepository::device_ready() const {
  std::string why;
  for (const auto& device : devices_) {
    const DeviceHealth health = device->health();
    if (health.state == DeviceState::kServing) return Status::ok();
    if (!why.empty()) why += "; ";
    why += "device " + (devices_.size() > 1 ? std::to_string(device->index()) + " " : std::string()) +
           device_state_name(health.state) + ": " + health.reason;
  }
  return why.empty() ? Status::ok() : Status::unavailable(why);
}

const ServedModel* ModelRepository::find(std::string_view name) const {
  if (models_.empty()) return nullptr;
  if (name.empty()) return models_.front().get();
  for (const auto& model : models_) {
    if (model->name() == name) return model.get();
  }
  return nullptr;
}

std::vector<std::string> ModelRepository::names() const {
  std::vector<std::string> out;
  for (const auto& model : models_) out.push_back(model->name());
  return out;
}

}  // namespace tessera
