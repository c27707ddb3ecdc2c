#include "server/kserve/statistics.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

#include "server/models/model_repository.h"

namespace tessera::kserve {
namespace {

using nlohmann::json;

void fill(inference::StatisticDuration* out, const DurationStat& in) {
  out->set_count(in.count);
  out->set_ns(in.ns);
}

json to_json(const inference::StatisticDuration& d) { return {{"count", d.count()}, {"ns", d.ns()}}; }

json to_json(const inference::InferStatistics& s) {
  return {{"success", to_json(s.success())},
          {"fail", to_json(s.fail())},
          {"queue", to_json(s.queue())},
          {"compute_input", to_json(s.compute_input())},
          {"compute_infer", to_json(s.compute_infer())},
          {"compute_output", to_json(s.compute_output())},
          {"cache_hit", to_json(s.cache_hit())},
          {"cache_miss", to_json(s.cache_miss())}};
}

json to_json(const inference::InferBatchStatistics& b) {
  return {{"batch_size", b.batch_size()},
          {"compute_input", to_json(b.compute_input())},
          {"compute_infer", to_json(b.compute_infer())},
          {"compute_output", to_json(b.compute_output())}};
}

json to_json(const inference::ModelStatistics& m) {
  json batches = json::array();
  for (const auto& b : m.batch_stats()) batches.push_back(to_json(b));
  // tesserad keeps no memory usage per model nor per-response statistics (no decoupled models):
  // both are there, empty, as Triton writes them for such a model.
  return {{"name", m.name()},
          {"version", m.version()},
          {"last_inference", m.last_inference()},
          {"inference_count", m.inference_count()},
          {"execution_count", m.execution_count()},
          {"inference_stats", to_json(m.inference_stats())},
          {"batch_stats", std::move(batches)},
          {"memory_usage", json::array()},
          {"response_stats", json::object()}};
}

}  // namespace

inference::ModelStatistics make_model_statistics(const ServedModel& model) {
  const ModelStatisticsSnapshot s = model.statistics->snapshot();
  inference::ModelStatistics m;
  m.set_name(model.name());
  m.set_version(std::to_string(model.version));
  m.set_last_inference(s.last_inference_ms);
  m.set_inference_count(s.inference_count);
  m.set_execution_count(s.execution_count);
  inference::InferStatistics* stats = m.mutable_inference_stats();
  fill(stats->mutable_success(), s.success);
  fill(stats->mutable_fail(), s.fail);
  fill(stats->mutable_queue(), s.queue);
  fill(stats->mutable_compute_input(), s.compute_input);
  fill(stats->mutable_compute_infer(), s.compute_infer);
  fill(stats->mutable_compute_output(), s.compute_output);
  stats->mutable_cache_hit();
  stats->mutable_cache_miss();
  for (const auto& [size, batch] : s.batches) {
    inference::InferBatchStatistics* b = m.add_batch_stats();
    b->set_batch_size(size);
    fill(b->mutable_compute_input(), batch.compute_input);
    fill(b->mutable_compute_infer(), batch.compute_infer);
    fill(b->mutable_compute_output(), batch.compute_output);
  }
  return m;
}

Result<inference::ModelStatisticsResponse> model_statistics(const ModelRepository& models, std::string_view name,
                                                            std::string_view version) {
  inference::ModelStatisticsResponse response;
  if (!name.empty()) {
    // NOT_FOUND (or INVALID_ARGUMENT) as every other door says it.
    TESSERA_ASSIGN_OR_RETURN(auto model, models.resolve(name, version));
    if (!version.empty()) {
      *response.add_model_stats() = make_model_statistics(*model);
      return response;
    }
  }
  for (const std::shared_ptr<const ServedModel>& model : models.models()) {
    if (name.empty() || model->name() == name) *response.add_model_stats() = make_model_statistics(*model);
  }
  return response;
}

json statistics_json(const inference::ModelStatisticsResponse& response) {
  json stats = json::array();
  for (const auto& m : response.model_stats()) stats.push_back(to_json(m));
  return {{"model_stats", std::move(stats)}};
}

}  // namespace tessera::kserve
