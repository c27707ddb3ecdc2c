#include "accel/plan/plan_cache.h"

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace tessera::plan {
namespace {

// FNV-1a, 64 bit: stable across runs and machines of the same endianness, enough to tell plans apart.
class Fnv {
 public:
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) h_ = (h_ ^ b[i]) * 1099511628211ull;
  }
  template <class T>
  void value(const T& v) {
    bytes(&v, sizeof(v));
  }
  void text(const std::string& s) {
    value(s.size());
    bytes(s.data(), s.size());
  }
  uint64_t digest() const { return h_; }

 private:
  uint64_t h_ = 1469598103934665603ull;
};

std::string hex(uint64_t v) {
  std::ostringstream s;
  s << std::hex << v;
  return s.str();
}

// File names keep to [A-Za-z0-9._-].
std::string safe(const std::string& s) {
  std::string out = s.empty() ? "model" : s;
  for (char& c : out) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  }
  return out;
}

nlohmann::json to_json(const std::vector<Candidate>& choices) {
  nlohmann::json layers = nlohmann::json::array();
  for (const Candidate& c : choices) {
    layers.push_back({{"tile", {c.tile.m, c.tile.n, c.tile.r, c.tile.c}},
                      {"schedule", static_cast<int>(c.schedule)},
                      {"partition", static_cast<int>(c.partition)},
                      {"fold_rows", c.tile.fold_rows}});
  }
  return layers;
}

std::optional<std::vector<Candidate>> from_json(const nlohmann::json& layers) {
  if (!layers.is_array()) return std::nullopt;
  std::vector<Candidate> out;
  for (const auto& l : layers) {
    const auto& t = l.at("tile");
    if (!t.is_array() || t.size() != 4) return std::nullopt;
    Candidate c;
    c.tile = {t[0].get<uint32_t>(), t[1].get<uint32_t>(), t[2].get<uint32_t>(), t[3].get<uint32_t>(),
              l.value("fold_rows", false)};
    const int s = l.at("schedule").get<int>(), p = l.at("partition").get<int>();
    if (s < 0 || s > 2 || p < 0 || p > 2) return std::nullopt;
    c.schedule = static_cast<Schedule>(s);
    c.partition = static_cast<PartitionKind>(p);
    out.push_back(c);
  }
  return out;
}

}  // namespace

uint64_t plan_key(std::span<const abi::LayerDesc> layers, const BoardProfile& b, const PlanOptions& o) {
  Fnv h;
  h.value(kPlannerVersion);
  h.value(layers.size());
  for (abi::LayerDesc d : layers) {
    d.tile_m = d.tile_n = d.tile_r = d.tile_c = 0;
    h.value(d);
  }
  h.text(b.name);
  for (double v : {b.fabric_clock_mhz, b.ddr_gbps, b.cas_cycles, b.dma_start_cycles, b.dma_scatter_cycles,
                   b.dma_byte_cycles, b.static_watts, b.pj_per_mac, b.pj_per_ddr_byte, b.instance_ddr_gbps}) {
    h.value(v);
  }
  for (uint64_t v : {uint64_t{b.mac_lanes}, uint64_t{b.mac_channels}, uint64_t{b.compute_units},
                     uint64_t{b.kernel_instances}, b.input_buffer_bytes, b.weight_buffer_bytes, b.output_buffer_bytes,
                     uint64_t{b.burst_bytes}, uint64_t{b.add_lanes}, uint64_t{b.int8_macs_per_dsp}}) {
    h.value(v);
  }
  h.value(o.space);
  h.value(o.dram);
  h.value(o.objective);
  h.value(o.naive);
  return h.digest();
}

std::filesystem::path default_plan_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::filesystem::path(xdg) / "tessera/plans";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::filesystem::path(home) / ".cache/tessera/plans";
  return {};
}

PlanCache::PlanCache(std::filesystem::path dir) : dir_(std::move(dir)) {}

std::filesystem::path PlanCache::file_for(const std::string& model, const std::string& board) const {
  return dir_ / (safe(model) + "." + safe(board) + ".plan.json");
}

std::optional<std::vector<Candidate>> PlanCache::find(const std::string& model, const std::string& board,
                                                      uint64_t key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = memory_.find({model + "\n" + board, key}); it != memory_.end()) {
    ++hits_;
    return it->second;
  }
  if (!dir_.empty()) {
    std::ifstream in(file_for(model, board));
    if (in) {
      try {
        const nlohmann::json j = nlohmann::json::parse(in);
        if (j.at("key").get<std::string>() == hex(key)) {
          if (auto choices = from_json(j.at("layers"))) {
            memory_[{model + "\n" + board, key}] = *choices;
            ++hits_;
            return choices;
          }
        }
      } catch (const nlohmann::json::exception&) {
        // Unreadable or from another version: a miss; store() rewrites it.
      }
    }
  }
  ++misses_;
  return std::nullopt;
}

Status PlanCache::store(const std::string& model, const std::string& board, uint64_t key,
                        const std::vector<Candidate>& choices) {
  std::lock_guard<std::mutex> lock(mu_);
  memory_[{model + "\n" + board, key}] = choices;
  if (dir_.empty()) return Status::ok();
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  const auto file = file_for(model, board);
  const auto tmp = file.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    const nlohmann::json j = {{"model", model},
                              {"board", board},
                              {"planner_version", kPlannerVersion},
                              {"key", hex(key)},
                              {"layers", to_json(choices)}};
    out << j.dump(1) << "\n";
    if (!out) return Status::unavailable("plan cache: cannot write " + tmp);
  }
  std::filesystem::rename(tmp, file, ec);  // atomic: readers see the old or the new file
  if (ec) return Status::unavailable("plan cache: cannot write " + file.string() + ": " + ec.message());
  return Status::ok();
}

uint64_t PlanCache::hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hits_;
}

uint64_t PlanCache::misses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return misses_;
}

Result<ModelPlan> plan_layers_cached(std::span<const abi::LayerDesc> layers, std::span<const std::string> names,
                                     const BoardProfile& board, const PlanOptions& options, const std::string& model,
                                     PlanCache* cache, bool* from_cache) {
  if (from_cache) *from_cache = false;
  if (!cache) return plan_layers(layers, names, board, options);
  const uint64_t key = plan_key(layers, board, options);
  if (auto choices = cache->find(model, board.name, key); choices && choices->size() == layers.size()) {
    auto plan = plan_with_choices(layers, names, board, options, *choices);
    if (plan.is_ok()) {
      if (from_cache) *from_cache = true;
      return plan;
    }
  }
  TESSERA_ASSIGN_OR_RETURN(ModelPlan plan, plan_layers(layers, names, board, options));
  std::vector<Candidate> choices;
  for (const LayerPlan& l : plan.layers) choices.push_back(l.candidate);
  (void)cache->store(model, board.name, key, choices);  // a read-only cache dir only costs the next search
  return plan;
}

}  // namespace tessera::plan
