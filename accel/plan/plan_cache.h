// Plans cached per (model, board): the tile search's choices (tiles, schedule, partition per
// layer) kept in memory and, given a directory, in one JSON file per model and board, so a daemon
// restart or a second `tessera plan` skips the search. The key hashes what the choices depend on
// (every descriptor with its tiles cleared, every number of the board profile, the plan options
// and the planner's version); a stale or unreadable file is a miss and is rewritten.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "accel/plan/model_plan.h"

namespace tessera::plan {

// Bumped whenever the search or the cost model changes what it picks.
inline constexpr uint32_t kPlannerVersion = 10;

// Hash of everything a plan depends on.
uint64_t plan_key(std::span<const abi::LayerDesc> layers, const BoardProfile& board, const PlanOptions& options);

// ${XDG_CACHE_HOME:-$HOME/.cache}/tessera/plans; empty when neither variable is set.
std::filesystem::path default_plan_cache_dir();

class PlanCache {
 public:
  // `dir` empty: memory only.
  explicit PlanCache(std::filesystem::path dir = {});

  // The cached choices, one per layer, or nothing.
  std::optional<std::vector<Candidate>> find(const std::string& model, const std::string& board, uint64_t key);
  // Stores the choices; a directory that cannot be written is reported, the memory copy kept.
  Status store(const std::string& model, const std::string& board, uint64_t key, const std::vector<Candidate>& choices);

  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path file_for(const std::string& model, const std::string& board) const;
  uint64_t hits() const;
  uint64_t misses() const;

 private:
  std::filesystem::path dir_;
  mutable std::mutex mu_;
  std::map<std::pair<std::string, uint64_t>, std::vector<Candidate>> memory_;
  uint64_t hits_ = 0, misses_ = 0;
};

// plan_layers through the cache: a hit re-costs the cached choices (no search), a miss searches
// and stores. *from_cache (if given) says which.
Result<ModelPlan> plan_layers_cached(std::span<const abi::LayerDesc> layers, std::span<const std::string> names,
                                     const BoardProfile& board, const PlanOptions& options, const std::string& model,
                                     PlanCache* cache, bool* from_cache = nullptr);

}  // namespace tessera::plan
