#include "server/models/model_repository.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <exception>
#include <set>

#include "server/models/model_folder.h"

namespace tessera {
namespace fs = std::filesystem;

struct ModelRepository::Entry {
  fs::path dir;
  std::map<int64_t, std::shared_ptr<const ServedModel>> versions;  // the served ones
  bool loading = false;
  bool unloaded = false;
  std::string failure;         // why the last load failed ("" when it did not)
  fs::file_time_type stamp{};  // the folder's newest change when it was last loaded (poll mode)
  uint64_t generation = 0;     // advances at each unload: a load started before it is dropped
};

Result<std::unique_ptr<ModelRepository>> ModelRepository::load(const fs::path& root, const RepositoryOptions& options) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<fs::path> dirs, model_folders(root));
  if (dirs.empty()) {
    return Status::not_found("no models in " + root.string() + " (no subfolder holds a model.toml)");
  }
  std::unique_ptr<ModelRepository> repo(new ModelRepository(root, options));
  for (const auto& dir : dirs) {
    TESSERA_ASSIGN_OR_RETURN(auto versions, load_model_folder(dir, options.engine, options.batching));
    const std::string& name = versions.front()->name();
    Entry& entry = repo->entries_[name];
    if (!entry.versions.empty()) {
      return Status::invalid_argument("model folder " + dir.string() +
                                      ": another folder already serves a model named '" + name + "'");
    }
    entry.dir = dir;
    entry.stamp = newest_change(dir);
    for (auto& version : versions) entry.versions[version->version] = std::move(version);
    if (repo->default_name_.empty()) repo->default_name_ = name;
  }
  repo->loader_ = std::thread([r = repo.get()] { r->loader_loop(); });
  return repo;
}

ModelRepository::ModelRepository(fs::path root, RepositoryOptions options)
    : root_(std::move(root)), options_(std::move(options)) {
  devices_ = options_.engine.instances;
  if (devices_.empty() && options_.engine.supervisor) devices_.push_back(options_.engine.supervisor);
}

ModelRepository::ModelRepository(std::vector<std::unique_ptr<ServedModel>> models,
                                 std::vector<std::shared_ptr<DeviceSupervisor>> devices)
    : devices_(std::move(devices)) {
  for (auto& model : models) {
    const std::string name = model->name();
    if (default_name_.empty()) default_name_ = name;
    const int64_t version = model->version;
    entries_[name].versions[version] = std::shared_ptr<const ServedModel>(std::move(model));
  }
  loader_ = std::thread([this] { loader_loop(); });
}

ModelRepository::~ModelRepository() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  loader_cv_.notify_all();
  if (loader_.joinable()) loader_.join();
}

std::shared_ptr<const ServedModel> ModelRepository::find(std::string_view name, std::string_view version) const {
  auto found = resolve(name, version);
  return found ? std::move(found).value() : nullptr;
}

Result<std::shared_ptr<const ServedModel>> ModelRepository::resolve(std::string_view name,
                                                                    std::string_view version) const {
  std::lock_guard lock(mu_);
  const std::string key(name.empty() ? std::string_view(default_name_) : name);
  const auto it = entries_.find(key);
  if (it == entries_.end() || it->second.versions.empty()) {
    return Status::not_found("no model named '" + key + "'" +
                             (it != entries_.end() && it->second.loading ? " is ready yet (it is loading)" : ""));
  }
  const auto& versions = it->second.versions;
  if (version.empty()) return versions.rbegin()->second;
  int64_t number = 0;
  const auto [end, ec] = std::from_chars(version.data(), version.data() + version.size(), number);
  if (ec != std::errc() || end != version.data() + version.size() || number < 1) {
    return Status::invalid_argument("model version '" + std::string(version) + "' is not a version number");
  }
  const auto found = versions.find(number);
  if (found != versions.end()) return found->second;
  std::string served;
  for (const auto& [v, model] : versions) served += (served.empty() ? "" : ", ") + std::to_string(v);
  return Status::not_found("model '" + key + "' has no version " + std::string(version) + " (served: " + served + ")");
}

std::vector<std::shared_ptr<const ServedModel>> ModelRepository::models() const {
  std::lock_guard lock(mu_);
  std::vector<std::shared_ptr<const ServedModel>> out;
  for (const auto& [name, entry] : entries_) {
    for (const auto& [version, model] : entry.versions) out.push_back(model);
  }
  return out;
}

std::vector<std::string> ModelRepository::names() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [name, entry] : entries_) {
    if (!entry.versions.empty()) out.push_back(name);
  }
  return out;
}

std::string ModelRepository::default_name() const {
  std::lock_guard lock(mu_);
  return default_name_;
}

std::vector<ModelIndexEntry> ModelRepository::index() {
  std::set<fs::path> known;
  std::vector<ModelIndexEntry> rows;
  {
    std::lock_guard lock(mu_);
    for (const auto& [name, entry] : entries_) {
      known.insert(entry.dir);
      std::error_code ec;
      // A model whose folder is gone and that serves nothing is no longer part of the repository.
      if (entry.versions.empty() && !entry.loading && !entry.dir.empty() && !fs::exists(entry.dir, ec)) continue;
      for (const auto& [version, model] : entry.versions) rows.push_back({name, std::to_string(version), "READY", ""});
      if (entry.loading) rows.push_back({name, "", "LOADING", "loading in the background"});
      if (!entry.failure.empty()) rows.push_back({name, "", "UNAVAILABLE", entry.failure});
      if (entry.versions.empty() && !entry.loading && entry.failure.empty()) {
        rows.push_back({name, "", "UNAVAILABLE", entry.unloaded ? "unloaded" : "not loaded"});
      }
    }
  }
  // Folders of the repository nothing was loaded from yet.
  auto dirs = root_.empty() ? Result<std::vector<fs::path>>(std::vector<fs::path>()) : model_folders(root_);
  if (dirs) {
    for (const fs::path& dir : *dirs) {
      if (!known.contains(dir)) rows.push_back({folder_model_name(dir), "", "UNAVAILABLE", "not loaded"});
    }
  }
  return rows;
}

fs::path ModelRepository::folder_of(const std::string& name) {
  {
    std::lock_guard lock(mu_);
    if (auto it = entries_.find(name); it != entries_.end() && !it->second.dir.empty()) return it->second.dir;
  }
  if (root_.empty()) return {};
  auto dirs = model_folders(root_);
  if (!dirs) return {};
  for (const fs::path& dir : *dirs) {
    if (folder_model_name(dir) == name) return dir;
  }
  return {};
}

Status ModelRepository::load_model(const std::string& name) {
  const fs::path dir = folder_of(name);
  if (dir.empty()) {
    return Status::not_found("no folder of the model repository " + root_.string() + " holds a model named '" + name +
                             "'");
  }
  {
    std::lock_guard lock(mu_);
    Entry& entry = entries_[name];
    entry.dir = dir;
    entry.loading = true;
    if (std::find(pending_.begin(), pending_.end(), name) == pending_.end()) pending_.push_back(name);
  }
  loader_cv_.notify_all();
  spdlog::info("model '{}': loading from {} in the background", name, dir.string());
  return Status::ok();
}

Status ModelRepository::unload_model(const std::string& name) {
  std::map<int64_t, std::shared_ptr<const ServedModel>> dropped;  // destroyed outside the lock
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(name);
    if (it == entries_.end() || (it->second.versions.empty() && !it->second.loading)) {
      return Status::not_found("no model named '" + name + "' is served or loading");
    }
    Entry& entry = it->second;
    dropped.swap(entry.versions);
    entry.loading = false;
    entry.unloaded = true;
    entry.failure.clear();
    ++entry.generation;
    pending_.erase(std::remove(pending_.begin(), pending_.end(), name), pending_.end());
    if (default_name_ == name) {
      default_name_.clear();
      for (const auto& [other, e] : entries_) {
        if (!e.versions.empty()) {
          default_name_ = other;
          break;
        }
      }
    }
  }
  idle_cv_.notify_all();
  spdlog::info("model '{}': unloaded ({} version(s)); requests in flight on it finish", name, dropped.size());
  return Status::ok();
}

void ModelRepository::poll() {
  if (root_.empty()) return;
  auto dirs = model_folders(root_);
  if (!dirs) return spdlog::warn("model repository poll: {}", dirs.status().message());
  // Read the folders before taking the lock: requests look models up under it.
  struct Seen {
    fs::path dir;
    std::string name;
    fs::file_time_type stamp;
  };
  std::vector<Seen> seen;
  for (const fs::path& dir : *dirs) seen.push_back({dir, folder_model_name(dir), newest_change(dir)});
  const std::set<fs::path> present(dirs->begin(), dirs->end());
  std::vector<std::string> gone, changed;
  {
    std::lock_guard lock(mu_);
    for (const auto& [name, entry] : entries_) {
      if (!entry.versions.empty() && !present.contains(entry.dir)) gone.push_back(name);
    }
    for (const Seen& folder : seen) {
      auto it = entries_.find(folder.name);
      std::error_code ec;
      // Another folder that names a model already served from its own folder is not that model.
      if (it != entries_.end() && it->second.dir != folder.dir && fs::exists(it->second.dir, ec)) continue;
      if (it == entries_.end() || (!it->second.loading && it->second.stamp != folder.stamp)) {
        changed.push_back(folder.name);
      }
    }
  }
  for (const std::string& name : gone) (void)unload_model(name);
  for (const std::string& name : changed) (void)load_model(name);
}

bool ModelRepository::wait_idle(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  return idle_cv_.wait_for(lock, timeout, [&] { return pending_.empty() && !loading_; });
}

void ModelRepository::set_on_loaded(std::function<void(const ServedModel&)> on_loaded) {
  std::lock_guard lock(on_loaded_mu_);
  on_loaded_ = std::move(on_loaded);
}

void ModelRepository::loader_loop() {
  std::unique_lock lock(mu_);
  auto next_poll = std::chrono::steady_clock::now() + options_.poll_interval;
  for (;;) {
    if (options_.poll_interval.count() > 0) {
      loader_cv_.wait_until(lock, next_poll, [&] { return stopping_ || !pending_.empty(); });
    } else {
      loader_cv_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
    }
    if (stopping_) return;
    if (pending_.empty()) {  // time to poll
      lock.unlock();
      poll();
      lock.lock();
      next_poll = std::chrono::steady_clock::now() + options_.poll_interval;
      continue;
    }
    const std::string name = pending_.front();
    pending_.pop_front();
    loading_ = true;
    const fs::path dir = entries_[name].dir;
    const uint64_t generation = entries_[name].generation;
    lock.unlock();
    load_now(name, dir, generation);
    lock.lock();
    loading_ = false;
    idle_cv_.notify_all();
  }
}

void ModelRepository::load_now(const std::string& name, const fs::path& dir, uint64_t generation) {
  const fs::file_time_type stamp = newest_change(dir);
  auto loaded = load_model_folder(dir, options_.engine, options_.batching);
  if (loaded && loaded->front()->name() != name) {
    loaded = Status::invalid_argument("model folder " + dir.string() + " now names its model '" +
                                      loaded->front()->name() + "', not '" + name + "'");
  }
  std::map<int64_t, std::shared_ptr<const ServedModel>> replaced;  // destroyed outside the lock
  {
    std::lock_guard lock(mu_);
    Entry& entry = entries_[name];
    if (entry.generation != generation) return;  // unloaded meanwhile
    entry.loading = std::find(pending_.begin(), pending_.end(), name) != pending_.end();
    entry.stamp = stamp;
    if (!loaded) {
      entry.failure = loaded.status().message();
      spdlog::error("model '{}': load failed: {}; {}", name, entry.failure,
                    entry.versions.empty() ? "not served" : "the versions already served keep serving");
      return;
    }
    entry.failure.clear();
    entry.unloaded = false;
    replaced.swap(entry.versions);
    for (auto& version : *loaded) entry.versions[version->version] = version;
    if (default_name_.empty()) default_name_ = name;
  }
  std::string versions;
  std::lock_guard callback(on_loaded_mu_);
  for (const auto& version : *loaded) {
    versions += (versions.empty() ? "" : ", ") + std::to_string(version->version);
    if (on_loaded_) on_loaded_(*version);
  }
  spdlog::info("model '{}': serving version(s) {} from {} ({} version(s) replaced)", name, versions, dir.string(),
               replaced.size());
}

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

}  // namespace tessera
