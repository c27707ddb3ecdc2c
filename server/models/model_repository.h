// The models tesserad serves: the subfolders of --models, each one model. A folder holds a
// model.toml and either the model's files (one version, 1) or numbered subfolders (versions 1, 2,
// ...) holding them, of which model.toml's [version_policy] picks the ones served (latest N or
// specific). The repository is live: models are loaded, reloaded and unloaded while others serve
// (the KServe repository extension, `tessera models load|unload`, poll mode). A load compiles and
// plans on the repository's loader thread; the versions it replaces keep serving until the new
// ones are ready, and the requests in flight on an unloaded version keep it alive until answered.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "accel/common/status.h"
#include "accel/runtime/engine.h"
#include "server/models/model_statistics.h"

namespace tessera {

// How a model's requests are batched (model.toml [batching] over the daemon's defaults).
struct BatchPolicy {
  uint32_t max_batch = 8;              // images per batch (and per device run)
  uint32_t max_queue_delay_us = 2000;  // how long a batch's first request waits for company
  uint32_t max_queue = 256;            // waiting requests; one more is refused at once
};

// One loaded version of a model and what clients are told about it.
struct ServedModel {
  std::unique_ptr<Engine> engine;
  BatchPolicy batching;
  std::string precision;          // "int8" | "fp32"
  std::string device;             // "emu" | "xrt" | "host" (fp32)
  std::vector<unsigned> devices;  // int8: the daemon's device instances it runs on (indices)
  int64_t version = 1;            // its numbered subfolder, 1 for an unversioned folder
  // What this version has served (the statistics extension); recorded through a const ServedModel.
  std::unique_ptr<ModelStatistics> statistics = std::make_unique<ModelStatistics>();

  const ModelConfig& config() const { return engine->config(); }
  const std::string& name() const { return config().name; }
  int num_classes() const { return engine->num_classes(); }
};

// One row of the repository index: a served version, or a model that has none ready.
struct ModelIndexEntry {
  std::string name;
  std::string version;  // "" when the row is about the model rather than a version
  std::string state;    // "READY", "LOADING" or "UNAVAILABLE"
  std::string reason;   // why not ready (a failed load names the folder and the error), or ""
};

// What a repository loads its models with.
struct RepositoryOptions {
  EngineOptions engine;  // .instances: the daemon's device instances
  BatchPolicy batching;  // defaults under each model.toml's [batching]
  // Poll mode: how often the loader rescans the folder (0: never; loads come through the API).
  std::chrono::milliseconds poll_interval{0};
};

class ModelRepository {
 public:
  // Loads every subfolder of `root` that holds a model.toml, in name order; the first is the
  // default. Any folder that fails, two models with one name, or no model at all is an error
  // naming the folder and why (a start with a broken repository fails; later loads do not).
  static Result<std::unique_ptr<ModelRepository>> load(const std::filesystem::path& root,
                                                       const RepositoryOptions& options = {});

  // From models loaded elsewhere (tests); the first is the default, and load/unload only know
  // these. `devices`: the health of each device instance the int8 models run on.
  explicit ModelRepository(std::vector<std::unique_ptr<ServedModel>> models,
                           std::vector<std::shared_ptr<DeviceSupervisor>> devices = {});
  ~ModelRepository();  // stops the loader thread (a load in progress finishes first)
  ModelRepository(const ModelRepository&) = delete;
  ModelRepository& operator=(const ModelRepository&) = delete;

  // The named model at `version` ("" = its newest served version), or the default model for an
  // empty name; null when there is none. The pointer keeps the version alive while held.
  std::shared_ptr<const ServedModel> find(std::string_view name, std::string_view version = "") const;
  // NOT_FOUND naming the model or the version (and the versions there are), INVALID_ARGUMENT for
  // a version that is not a number.
  Result<std::shared_ptr<const ServedModel>> resolve(std::string_view name, std::string_view version) const;
  // Every served version, by name then version.
  std::vector<std::shared_ptr<const ServedModel>> models() const;
  std::vector<std::string> names() const;
  // The name requests without one go to ("" when nothing is served).
  std::string default_name() const;
  // The default model's newest version (null when nothing is served).
  std::shared_ptr<const ServedModel> default_model() const { return find(""); }

  // The index: every model of the repository folder (and every one served), its versions and
  // states. Rescans the folder for models not seen yet.
  std::vector<ModelIndexEntry> index();
  // Starts loading (or reloading) model `name` in the background and returns: NOT_FOUND when no
  // folder of the repository holds it. Its served versions keep serving until the new ones are
  // ready; a load that fails leaves them (and every other model) as they were and says why in
  // the index.
  Status load_model(const std::string& name);
  // Stops serving every version of `name` (requests in flight finish): NOT_FOUND when it is not
  // served or loading.
  Status unload_model(const std::string& name);
  // Poll mode, one round: loads the folders that are new or changed since they were loaded and
  // unloads the models whose folder is gone.
  void poll();
  // Waits (at most `timeout`) until no load is queued or running; false on timeout.
  bool wait_idle(std::chrono::milliseconds timeout) const;
  // Called on the loader thread with each version once it serves (the stats make its series).
  // Replaces the previous one; an empty one stops the calls (when this returns, none is running).
  void set_on_loaded(std::function<void(const ServedModel&)> on_loaded);

  // Readiness as far as the devices go: OK while one of them serves (or there is none), else
  // UNAVAILABLE "device 0 recovering: ...; device 1 out of service: ...".
  Status device_ready() const;
  // The daemon's device instances, by index (--devices order).
  const std::vector<std::shared_ptr<DeviceSupervisor>>& devices() const { return devices_; }

 private:
  struct Entry;

  ModelRepository(std::filesystem::path root, RepositoryOptions options);
  // The folder of model `name` under root_ (a rescan when it is not known yet); empty when none.
  std::filesystem::path folder_of(const std::string& name);
  // The loader thread: takes queued names and loads their folders.
  void loader_loop();
  // Loads one folder's versions and swaps them in, or records why not.
  void load_now(const std::string& name, const std::filesystem::path& dir, uint64_t generation);

  const std::filesystem::path root_;  // empty for a repository built from models (tests)
  const RepositoryOptions options_;
  std::vector<std::shared_ptr<DeviceSupervisor>> devices_;

  mutable std::mutex mu_;
  mutable std::condition_variable idle_cv_;
  std::map<std::string, Entry> entries_;  // by model name
  std::string default_name_;
  std::deque<std::string> pending_;  // names queued for the loader
  bool loading_ = false;             // the loader is inside load_now()
  bool stopping_ = false;
  std::condition_variable loader_cv_;
  std::mutex on_loaded_mu_;  // held while on_loaded_ runs, so set_on_loaded(nullptr) waits for it
  std::function<void(const ServedModel&)> on_loaded_;
  std::thread loader_;
};

}  // namespace tessera
