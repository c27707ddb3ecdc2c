// What the per-type Caffe layer converters share: the layer being converted (NetBuilder::Layer),
// the checks and field readers every family uses, and the converters themselves, one file per
// family (caffe_vision_layers.cc, caffe_math_layers.cc, caffe_structure_layers.cc). Internal to
// the Caffe importer; the registry of layer types is caffe_layers.cc.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "accel/common/status.h"
#include "accel/graph/graph.h"
#include "accel/import/caffe/caffe_layers.h"
#include "caffe.pb.h"

namespace tessera::caffe_import {

struct NetBuilder::Layer {
  const caffe::LayerParameter& p;
  std::string label;  // describe_layer(p)
  std::string name;   // the layer's name, or its first top when unnamed

  Status error(const std::string& what) const { return Status::invalid_argument(label + ": " + what); }
  Status unsupported(const std::string& what) const { return Status::unimplemented(label + ": " + what); }
};

using Layer = NetBuilder::Layer;
using Pair = std::array<int, 2>;

// Refuses a layer whose bottom count is outside [min_bottoms, max_bottoms] or whose top count is
// not `tops` (-1: any).
Status expect_counts(const Layer& l, int min_bottoms, int max_bottoms, int tops);

// Caffe's axis convention: [-rank, rank).
Result<int> layer_axis(const Layer& l, int axis, int rank, const char* field);

// A one-element tensor holding `v`.
Tensor scalar(float v);

// Spatial value from the _h/_w pair or the repeated/optional plain field.
Result<std::array<int, 2>> spatial(const Layer& l, const char* name, bool has_h, uint32_t h, bool has_w, uint32_t w,
                                   const std::vector<uint32_t>& plain, int fallback, bool required);

// A repeated proto field's values.
template <class R>
std::vector<uint32_t> values(const R& repeated) {
  return std::vector<uint32_t>(repeated.begin(), repeated.end());
}

// Vision layers (caffe_vision_layers.cc): NCHW windows.
Status convert_convolution(NetBuilder& b, const Layer& l);
Status convert_pooling(NetBuilder& b, const Layer& l);
Status convert_lrn(NetBuilder& b, const Layer& l);

// Math layers (caffe_math_layers.cc): dense, per-element and per-channel arithmetic.
Status convert_inner_product(NetBuilder& b, const Layer& l);
Status convert_relu(NetBuilder& b, const Layer& l);
Status convert_eltwise(NetBuilder& b, const Layer& l);
Status convert_batch_norm(NetBuilder& b, const Layer& l);
Status convert_scale(NetBuilder& b, const Layer& l);
Status convert_softmax(NetBuilder& b, const Layer& l);

// Structure layers (caffe_structure_layers.cc): inputs, and layers that only join, alias or reshape.
Status convert_input(NetBuilder& b, const Layer& l);
Status convert_concat(NetBuilder& b, const Layer& l);
// Dropout (inference: identity) and Split (every top is the bottom): no node, only names.
Status convert_alias(NetBuilder& b, const Layer& l, bool split);
Status convert_flatten(NetBuilder& b, const Layer& l);
Status convert_reshape(NetBuilder& b, const Layer& l);

}  // namespace tessera::caffe_import
