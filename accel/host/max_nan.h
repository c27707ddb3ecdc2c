// The larger of two floats, NaN when either is (as in PyTorch's and ONNX's MaxPool): the order of
// the reads does not change the result. A select, so the pools' loops over a row vectorise.
#pragma once

namespace tessera::host {

inline float max_nan(float v, float m) { return (v > m || v != v) ? v : m; }

}  // namespace tessera::host
