// Activation calibration: runs the float graph on sample inputs and records, per tensor, the
// range symmetric int8 quantisation should cover (max |x|, or a percentile of |x|).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "accel/common/status.h"
#include "accel/graph/graph.h"
#include "accel/graph/tensor.h"

namespace tessera::quant {

enum class CalibrationMethod { kMinMax, kPercentile };

struct CalibrationOptions {
  CalibrationMethod method = CalibrationMethod::kMinMax;
  double percentile = 99.99;  // of |x|, for kPercentile
};

// Ranges of the graph input and of every node output, over all `samples` (each N x C x H x W).
Result<std::map<std::string, float>> calibrate_ranges(const Graph& graph, const std::vector<Tensor>& samples,
                                                      const CalibrationOptions& options);

}  // namespace tessera::quant
