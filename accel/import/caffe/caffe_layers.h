// Conversion of Caffe layers into IR nodes: NetBuilder tracks which IR tensor each Caffe blob
// name currently holds (in-place layers and Split tops rename, Dropout aliases), the shape of
// every tensor (batch 1), and the net's outputs (blobs no later layer reads).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "accel/common/status.h"
#include "accel/graph/graph.h"
#include "caffe.pb.h"

namespace tessera::caffe_import {

using WeightsByLayer = std::map<std::string, const google::protobuf::RepeatedPtrField<caffe::BlobProto>*>;

// "layer 'conv1' (Convolution)" — the prefix of every error about a layer.
std::string describe_layer(const caffe::LayerParameter& layer);
bool is_supported_layer_type(const std::string& type);
Status unsupported_layer_error(const caffe::LayerParameter& layer);

// A blob's data with its shape (BlobShape, or the legacy num/channels/height/width).
Result<Tensor> blob_to_tensor(const caffe::BlobProto& blob, const std::string& what);

class NetBuilder {
 public:
  NetBuilder(std::string name, WeightsByLayer weights, bool have_caffemodel);

  Status add_input(const std::string& blob, const Shape& shape, const std::string& what);
  Status add_layer(const caffe::LayerParameter& layer);
  // The graph, its outputs being the blobs no layer consumed; validated.
  Result<Graph> finish();

  // Used by the per-type converters (caffe_converters.h).
  struct Layer;
  Result<std::string> bottom(const Layer& l, int index);
  const Shape& shape_of(const std::string& tensor) const { return shapes_.at(tensor); }
  std::string constant(const std::string& base, Tensor value);
  Tensor* mutable_constant(const std::string& name) { return &graph_.constants.at(name); }
  // Appends a node reading `inputs`; returns its output tensor name (given or fresh).
  Result<std::string> node(const Layer& l, OpKind op, std::vector<std::string> inputs, NodeAttrs attrs,
                           const std::string& suffix = "");
  // Binds Caffe top `index` of the layer to an IR tensor.
  void set_top(const Layer& l, int index, const std::string& tensor);
  Result<Tensor> weight(const Layer& l, int index, const Shape& expected, const char* what);
  int weight_count(const Layer& l) const;
  // The node producing `tensor`, or null (graph input, constant).
  Node* producer(const std::string& tensor);
  bool consumed_by_node(const std::string& tensor) const;

 private:
  std::string fresh_name(const std::string& base);

  Graph graph_;
  WeightsByLayer weights_;
  bool have_caffemodel_;
  std::map<std::string, std::string> blobs_;  // Caffe blob name -> IR tensor
  std::map<std::string, Shape> shapes_;       // IR tensor -> shape (batch 1)
  std::set<std::string> used_;                // IR names taken
  std::vector<std::string> open_outputs_;     // Caffe blobs produced and not yet consumed, in order
};

}  // namespace tessera::caffe_import
