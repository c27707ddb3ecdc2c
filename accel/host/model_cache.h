// Per-model state of the host kernels: data they derive from a model's constants once instead of
// on every call (oneDNN's convolution weights in its own blocked layout). The owner of the Graph
// owns its cache beside it (the fp32 Engine), so an entry lives exactly as long as the constants
// it was made from: no cache keyed by addresses outlives a model and serves a reloaded one.
// Thread-safe: concurrent runs of the model share it.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace tessera::host {

class ModelCache {
 public:
  using Entry = std::shared_ptr<const void>;

  // The entry made by `make` for (`source`, `key`): `source` is the constant it is derived from
  // (its data must not change while the cache lives), `key` what else it depends on (the layer's
  // geometry, a part of it). Made once; two callers racing on a new key may both make it, one
  // result is kept.
  Entry get(const void* source, const std::vector<int64_t>& key, const std::function<Entry()>& make) {
    std::pair<const void*, std::vector<int64_t>> k{source, key};
    {
      const std::lock_guard lock(mutex_);
      if (auto it = entries_.find(k); it != entries_.end()) return it->second;
    }
    Entry made = make();
    const std::lock_guard lock(mutex_);
    return entries_.emplace(std::move(k), std::move(made)).first->second;
  }

  size_t size() const {
    const std::lock_guard lock(mutex_);
    return entries_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<const void*, std::vector<int64_t>>, Entry> entries_;
};

}  // namespace tessera::host
