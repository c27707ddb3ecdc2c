#include "accel/quant/calibration.h"

#include <algorithm>
#include <cmath>

#include "accel/host/reference_executor.h"

namespace tessera::quant {

Result<std::map<std::string, float>> calibrate_ranges(const Graph& graph, const std::vector<Tensor>& samples,
                                                      const CalibrationOptions& options) {
  if (samples.empty()) return Status::invalid_argument("calibration needs at least one sample input");
  if (graph.inputs.size() != 1) return Status::invalid_argument("calibration needs a graph with one input");
  if (options.method == CalibrationMethod::kPercentile && !(options.percentile > 0 && options.percentile <= 100)) {
    return Status::invalid_argument("calibration percentile must be in (0, 100]");
  }
  // Every activation becomes an output, so the executor keeps it.
  Graph probe = graph;
  probe.outputs.clear();
  for (const Node& n : graph.nodes) probe.outputs.push_back({n.outputs[0], {}});

  const std::string& input = graph.inputs[0].name;
  std::map<std::string, std::vector<float>> magnitudes;  // kPercentile: every |x|
  std::map<std::string, float> max_abs;
  auto record = [&](const std::string& name, const Tensor& t) {
    float m = 0;
    for (float v : t.data) m = std::max(m, std::fabs(v));
    max_abs[name] = std::max(max_abs[name], m);
    if (options.method == CalibrationMethod::kPercentile) {
      auto& all = magnitudes[name];
      for (float v : t.data) all.push_back(std::fabs(v));
    }
  };
  for (const Tensor& sample : samples) {
    TESSERA_ASSIGN_OR_RETURN(auto values, host::run_reference(probe, {{input, sample}}));
    record(input, sample);
    for (const auto& [name, tensor] : values) record(name, tensor);
  }
  if (options.method == CalibrationMethod::kMinMax) return max_abs;

  std::map<std::string, float> ranges;
  for (auto& [name, all] : magnitudes) {
    const auto k = static_cast<size_t>(std::min<double>(
        static_cast<double>(all.size() - 1), std::floor(options.percentile / 100.0 * static_cast<double>(all.size()))));
    std::nth_element(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(k), all.end());
    ranges[name] = all[k] > 0 ? all[k] : max_abs[name];
  }
  return ranges;
}

}  // namespace tessera::quant
