// The Caffe layer-type registry (type name -> converter) and NetBuilder: blob names to IR tensors,
// shapes, constants and weights. The converters themselves: caffe_converters.h.
#include "accel/import/caffe/caffe_layers.h"

#include <algorithm>
#include <functional>

#include "accel/graph/op_shapes.h"
#include "accel/import/caffe/caffe_converters.h"

namespace tessera::caffe_import {

namespace {

using Converter = std::function<Status(NetBuilder&, const Layer&)>;

const std::map<std::string, Converter>& converters() {
  static const std::map<std::string, Converter> table = {
      {"Input", convert_input},
      {"Convolution", convert_convolution},
      {"Pooling", convert_pooling},
      {"ReLU", convert_relu},
      {"InnerProduct", convert_inner_product},
      {"LRN", convert_lrn},
      {"Concat", convert_concat},
      {"Eltwise", convert_eltwise},
      {"BatchNorm", convert_batch_norm},
      {"Scale", convert_scale},
      {"Dropout", [](NetBuilder& b, const Layer& l) { return convert_alias(b, l, false); }},
      {"Split", [](NetBuilder& b, const Layer& l) { return convert_alias(b, l, true); }},
      {"Softmax", convert_softmax},
      {"Flatten", convert_flatten},
      {"Reshape", convert_reshape},
  };
  return table;
}

}  // namespace

std::string describe_layer(const caffe::LayerParameter& layer) {
  std::string name = layer.name();
  if (name.empty() && layer.top_size() > 0) name = layer.top(0);
  return "layer '" + name + "' (" + (layer.type().empty() ? std::string("no type") : layer.type()) + ")";
}

bool is_supported_layer_type(const std::string& type) { return converters().count(type) != 0; }

Status unsupported_layer_error(const caffe::LayerParameter& layer) {
  std::string hint;
  const std::string& t = layer.type();
  if (t.find("Loss") != std::string::npos || t == "Accuracy" || t.find("Data") != std::string::npos) {
    hint = " (a training layer: import the deploy prototxt, not train_val)";
  }
  return Status::unimplemented(describe_layer(layer) + ": layer type '" + t + "' is not supported by Tessera" + hint);
}

Result<Tensor> blob_to_tensor(const caffe::BlobProto& blob, const std::string& what) {
  Shape shape;
  if (blob.has_shape()) {
    shape.assign(blob.shape().dim().begin(), blob.shape().dim().end());
  } else if (blob.has_num() || blob.has_channels() || blob.has_height() || blob.has_width()) {
    shape = {blob.num(), blob.channels(), blob.height(), blob.width()};
  } else {
    shape = {static_cast<int64_t>(std::max(blob.data_size(), blob.double_data_size()))};
  }
  for (int64_t d : shape) {
    if (d < 0) return Status::invalid_argument(what + " has a negative dim in " + shape_to_string(shape));
  }
  Tensor t;
  t.shape = shape;
  if (blob.data_size() > 0) {
    t.data.assign(blob.data().begin(), blob.data().end());
  } else {
    for (double v : blob.double_data()) t.data.push_back(static_cast<float>(v));
  }
  if (static_cast<int64_t>(t.data.size()) != shape_elements(shape)) {
    return Status::invalid_argument(what + " declares shape " + shape_to_string(shape) + " (" +
                                    std::to_string(shape_elements(shape)) + " values) but holds " +
                                    std::to_string(t.data.size()));
  }
  return t;
}

NetBuilder::NetBuilder(std::string name, WeightsByLayer weights, bool have_caffemodel)
    : weights_(std::move(weights)), have_caffemodel_(have_caffemodel) {
  graph_.name = std::move(name);
}

std::string NetBuilder::fresh_name(const std::string& base) {
  std::string name = base.empty() ? "tensor" : base;
  for (int i = 2; used_.count(name); ++i) name = base + "#" + std::to_string(i);
  used_.insert(name);
  return name;
}

Status NetBuilder::add_input(const std::string& blob, const Shape& shape, const std::string& what) {
  if (blob.empty()) return Status::invalid_argument(what + ": an input has no name");
  if (blobs_.count(blob)) return Status::invalid_argument(what + ": input '" + blob + "' is defined twice");
  if (shape.size() != 4) {
    return Status::unimplemented(what + ": input '" + blob + "' has shape " + shape_to_string(shape) +
                                 "; Tessera takes one N x C x H x W image input");
  }
  for (size_t d = 1; d < shape.size(); ++d) {
    if (shape[d] < 1)
      return Status::invalid_argument(what + ": input '" + blob + "' has shape " + shape_to_string(shape));
  }
  const std::string name = fresh_name(blob);
  Shape one = shape;
  one[0] = 1;
  shapes_[name] = one;
  Shape dynamic = shape;
  dynamic[0] = -1;  // Caffe's num is only the default batch size
  graph_.inputs.push_back(ValueInfo{name, dynamic});
  blobs_[blob] = name;
  return Status::ok();
}

Result<std::string> NetBuilder::bottom(const Layer& l, int index) {
  const std::string& blob = l.p.bottom(index);
  auto it = blobs_.find(blob);
  if (it == blobs_.end()) return l.error("bottom '" + blob + "' is not produced by an earlier layer or an input");
  open_outputs_.erase(std::remove(open_outputs_.begin(), open_outputs_.end(), blob), open_outputs_.end());
  return it->second;
}

std::string NetBuilder::constant(const std::string& base, Tensor value) {
  std::string name = fresh_name(base);
  graph_.constants[name] = std::move(value);
  return name;
}

Result<std::string> NetBuilder::node(const Layer& l, OpKind op, std::vector<std::string> inputs, NodeAttrs attrs,
                                     const std::string& suffix) {
  Node n;
  n.op = op;
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  // The layer's own output takes the top's name when that is free (not in place), else the
  // layer's name; helper nodes take the layer's name and a suffix.
  std::string out_base = l.name + suffix;
  if (suffix.empty() && l.p.top_size() > 0 && !used_.count(l.p.top(0))) out_base = l.p.top(0);
  n.name = l.name + suffix;
  n.outputs = {out_base};  // named for real below, once the shape checks out
  std::vector<const Shape*> operands;
  for (const std::string& in : n.inputs) {
    if (auto it = shapes_.find(in); it != shapes_.end()) {
      operands.push_back(&it->second);
    } else {
      operands.push_back(&graph_.constants.at(in).shape);
    }
  }
  auto shape = node_output_shape(n, operands);
  if (!shape) return l.error(shape.status().message());
  const std::string out = fresh_name(out_base);
  n.outputs = {out};
  shapes_[out] = *shape;
  graph_.nodes.push_back(std::move(n));
  return out;
}

void NetBuilder::set_top(const Layer& l, int index, const std::string& tensor) {
  const std::string& blob = l.p.top(index);
  blobs_[blob] = tensor;
  open_outputs_.erase(std::remove(open_outputs_.begin(), open_outputs_.end(), blob), open_outputs_.end());
  open_outputs_.push_back(blob);
}

int NetBuilder::weight_count(const Layer& l) const {
  auto it = weights_.find(l.p.name());
  return it == weights_.end() ? 0 : it->second->size();
}

Result<Tensor> NetBuilder::weight(const Layer& l, int index, const Shape& expected, const char* what) {
  auto it = weights_.find(l.p.name());
  if (it == weights_.end()) {
    return l.error(
        std::string("no trained weights for this layer") +
        (have_caffemodel_ ? " in the caffemodel (weights are matched by layer name)" : " (no caffemodel given)"));
  }
  if (index >= it->second->size()) {
    return l.error("the caffemodel has " + std::to_string(it->second->size()) + " blob(s) for this layer; blob " +
                   std::to_string(index) + " (" + what + ") is missing");
  }
  const caffe::BlobProto& blob = it->second->Get(index);
  TESSERA_ASSIGN_OR_RETURN(Tensor t, [&]() -> Result<Tensor> {
    auto r = blob_to_tensor(blob, std::string("blob ") + std::to_string(index) + " (" + what + ")");
    if (!r) return l.error(r.status().message());
    return r;
  }());
  // Caffe's rule: a BlobShape must match exactly; a legacy 4-D blob matches the expected shape
  // padded with leading 1s to four dims.
  bool fits = t.shape == expected;
  if (!fits && !blob.has_shape() && expected.size() <= 4) {
    Shape padded(4 - expected.size(), 1);
    padded.insert(padded.end(), expected.begin(), expected.end());
    fits = t.shape == padded;
  }
  if (!fits) {
    return l.error("blob " + std::to_string(index) + " (" + what + ") has shape " + shape_to_string(t.shape) +
                   " but the layer needs " + shape_to_string(expected));
  }
  t.shape = expected;
  return t;
}

Node* NetBuilder::producer(const std::string& tensor) {
  for (Node& n : graph_.nodes) {
    if (!n.outputs.empty() && n.outputs[0] == tensor) return &n;
  }
  return nullptr;
}

bool NetBuilder::consumed_by_node(const std::string& tensor) const {
  for (const Node& n : graph_.nodes) {
    if (std::find(n.inputs.begin(), n.inputs.end(), tensor) != n.inputs.end()) return true;
  }
  return false;
}

Status NetBuilder::add_layer(const caffe::LayerParameter& layer) {
  auto it = converters().find(layer.type());
  if (it == converters().end()) return unsupported_layer_error(layer);
  Layer l{layer, describe_layer(layer), layer.name()};
  if (l.name.empty()) l.name = layer.top_size() > 0 ? layer.top(0) : layer.type();
  for (const std::string& top : layer.top()) {
    if (top.empty()) return l.error("has an empty top name");
  }
  return it->second(*this, l);
}

Result<Graph> NetBuilder::finish() {
  if (graph_.inputs.empty()) {
    return Status::invalid_argument(
        "the network has no input (declare `input:` with `input_shape`, or an Input layer)");
  }
  for (const std::string& blob : open_outputs_) {
    const std::string& tensor = blobs_.at(blob);
    Shape s = shapes_.at(tensor);
    s[0] = -1;
    graph_.outputs.push_back(ValueInfo{tensor, s});
  }
  if (graph_.outputs.empty()) return Status::invalid_argument("the network has no output (no layer produces a blob)");
  TESSERA_RETURN_IF_ERROR(validate_graph(graph_));
  return std::move(graph_);
}

}  // namespace tessera::caffe_import
