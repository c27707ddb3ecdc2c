// The models tesserad serves: every subfolder of --models that holds a model.toml.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "accel/common/status.h"
#include "accel/runtime/engine.h"

namespace tessera {

// How a model's requests are batched (model.toml [batching] over the daemon's defaults).
struct BatchPolicy {
  uint32_t max_batch = 8;              // images per batch (and per device run)
  uint32_t max_queue_delay_us = 2000;  // how long a batch's first request waits for company
  uint32_t max_queue = 256;            // waiting requests; one more is refused at once
};

// One loaded model and what clients are told about it.
struct ServedModel {
  std::unique_ptr<Engine> engine;
  BatchPolicy batching;
  std::string precision;  // "int8" | "fp32"
  std::string device;     // "emu" | "xrt" | "host" (fp32)
  std::vector<unsigned> devices;  // int8: the daemon's device instances it runs on (indices)

  const ModelConfig& config() const { return engine->config(); }
  const std::string& name() const { return config().name; }
  int num_classes() const { return engine->num_classes(); }
};

class ModelRepository {
 public:
  // Loads the subfolders of `root` that hold a model.toml, in name order; the first is the
  // default. A folder that fails to load, two models with one name, or no model at all is an
  // error naming the folder and why.
  // Every model gets `engine_options` (precision, device, plan) and `batching`, except where its
  // model.toml says otherwise (precision, [batching], [instances]); the engine's max_batch is the
  // model's. engine_options.instances: the daemon's device instances (an int8 model runs on all
  // of them unless its [instances] picks some).
  static Result<std::unique_ptr<ModelRepository>> load(const std::filesystem::path& root,
                                                       const EngineOptions& engine_options = {},
                                                       const BatchPolicy& batching = {});

  // From models loaded elsewhere (tests); the first is the default. `devices`: the health of
  // each device instance the int8 models run on (empty: none, or no one watches them).
  explicit ModelRepository(std::vector<std::unique_ptr<ServedModel>> models,
                           std::vector<std::shared_ptr<DeviceSupervisor>> devices = {});

  // The named model, or the default one for an empty name; nullptr when there is none.
  const ServedModel* find(std::string_view name) const;
  const ServedModel& default_model() const { return *models_.front(); }
  const std::vector<std::unique_ptr<ServedModel>>& models() const { return models_; }
  std::vector<std::string> names() const;

  // Readiness as far as the devices go: OK while one of them serves (or there is none), else
  // UNAVAILABLE "device 0 recovering: ...; device 1 out of service: ...".
  Status device_ready() const;
  // The daemon's device instances, by index (--devices order).
  const std::vector<std::shared_ptr<DeviceSupervisor>>& devices() const { return devices_; }

 private:
  std::vector<std::unique_ptr<ServedModel>> models_;
  std::vector<std::shared_ptr<DeviceSupervisor>> devices_;
};

}  // namespace tessera
