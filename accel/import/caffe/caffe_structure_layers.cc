// Caffe's structure layers: Input, Concat, Dropout and Split (aliases: no node), Flatten and Reshape.
#include <string>
#include <vector>

#include "accel/import/caffe/caffe_converters.h"

namespace tessera::caffe_import {

Status convert_input(NetBuilder& b, const Layer& l) {
  if (l.p.bottom_size() != 0) return l.error("an Input layer has no bottoms");
  const auto& p = l.p.input_param();
  if (l.p.top_size() < 1) return l.error("has no top");
  if (p.shape_size() != 1 && p.shape_size() != l.p.top_size()) {
    return l.error("has " + std::to_string(p.shape_size()) + " shapes for " + std::to_string(l.p.top_size()) + " tops");
  }
  for (int i = 0; i < l.p.top_size(); ++i) {
    const auto& s = p.shape(p.shape_size() == 1 ? 0 : i);
    TESSERA_RETURN_IF_ERROR(b.add_input(l.p.top(i), Shape(s.dim().begin(), s.dim().end()), l.label));
  }
  return Status::ok();
}

Status convert_concat(NetBuilder& b, const Layer& l) {
  TESSERA_RETURN_IF_ERROR(expect_counts(l, 1, 1 << 16, 1));
  const auto& p = l.p.concat_param();
  std::vector<std::string> inputs;
  for (int i = 0; i < l.p.bottom_size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(std::string x, b.bottom(l, i));
    inputs.push_back(x);
  }
  const int rank = static_cast<int>(b.shape_of(inputs[0]).size());
  const int raw = p.has_concat_dim() ? static_cast<int>(p.concat_dim()) : p.axis();
  TESSERA_ASSIGN_OR_RETURN(int axis, layer_axis(l, raw, rank, "axis"));
  if (inputs.size() == 1) {
    b.set_top(l, 0, inputs[0]);
    return Status::ok();
  }
  TESSERA_ASSIGN_OR_RETURN(std::string y, b.node(l, OpKind::kConcat, inputs, AxisAttrs{axis}));
  b.set_top(l, 0, y);
  return Status::ok();
}

// Dropout (inference: identity) and Split (every top is the bottom): no node, only names.
Status convert_alias(NetBuilder& b, const Layer& l, bool split) {
  TESSERA_RETURN_IF_ERROR(expect_counts(l, 1, 1, split ? -1 : 1));
  TESSERA_ASSIGN_OR_RETURN(std::string x, b.bottom(l, 0));
  for (int i = 0; i < l.p.top_size(); ++i) b.set_top(l, i, x);
  return Status::ok();
}

Status convert_flatten(NetBuilder& b, const Layer& l) {
  TESSERA_RETURN_IF_ERROR(expect_counts(l, 1, 1, 1));
  TESSERA_ASSIGN_OR_RETURN(std::string x, b.bottom(l, 0));
  const Shape in = b.shape_of(x);
  const int rank = static_cast<int>(in.size());
  TESSERA_ASSIGN_OR_RETURN(int axis, layer_axis(l, l.p.flatten_param().axis(), rank, "axis"));
  TESSERA_ASSIGN_OR_RETURN(int end, layer_axis(l, l.p.flatten_param().end_axis(), rank, "end_axis"));
  if (end < axis) return l.error("end_axis comes before axis");
  if (axis == 0) return l.unsupported("axis 0 (folding the batch into the features) is not supported");
  std::string y;
  if (axis == 1 && end == rank - 1) {
    TESSERA_ASSIGN_OR_RETURN(y, b.node(l, OpKind::kFlatten, {x}, AxisAttrs{1}));
  } else {
    ReshapeAttrs reshape;
    for (int d = 0; d < axis; ++d) reshape.shape.push_back(d == 0 ? 0 : in[static_cast<size_t>(d)]);
    int64_t merged = 1;
    for (int d = axis; d <= end; ++d) merged *= in[static_cast<size_t>(d)];
    reshape.shape.push_back(merged);
    for (int d = end + 1; d < rank; ++d) reshape.shape.push_back(in[static_cast<size_t>(d)]);
    TESSERA_ASSIGN_OR_RETURN(y, b.node(l, OpKind::kReshape, {x}, reshape));
  }
  b.set_top(l, 0, y);
  return Status::ok();
}

// Reshape: dims [axis, axis + num_axes) of the input are replaced by `shape` (0 copies the input
// dim at that position, one -1 is inferred: the IR's Reshape rules at the same positions).
Status convert_reshape(NetBuilder& b, const Layer& l) {
  TESSERA_RETURN_IF_ERROR(expect_counts(l, 1, 1, 1));
  const auto& p = l.p.reshape_param();
  TESSERA_ASSIGN_OR_RETURN(std::string x, b.bottom(l, 0));
  const Shape in = b.shape_of(x);
  const int rank = static_cast<int>(in.size());
  int start = p.axis() >= 0 ? p.axis() : p.axis() + rank + 1;
  if (start < 0 || start > rank) return l.error("axis " + std::to_string(p.axis()) + " is out of range");
  const int end = p.num_axes() == -1 ? rank : start + p.num_axes();
  if (p.num_axes() < -1 || end > rank) return l.error("num_axes " + std::to_string(p.num_axes()) + " is out of range");
  ReshapeAttrs reshape;
  for (int d = 0; d < start; ++d) reshape.shape.push_back(0);
  for (int64_t v : p.shape().dim()) {
    if (v < -1) return l.error("shape dim " + std::to_string(v) + " is invalid");
    reshape.shape.push_back(v);
  }
  for (int d = end; d < rank; ++d) reshape.shape.push_back(d == 0 ? 0 : in[static_cast<size_t>(d)]);
  // A literal batch size (the prototxt's num) would fix the batch; keep the batch dim as it is.
  if (start == 0 && !reshape.shape.empty() && reshape.shape[0] == in[0]) reshape.shape[0] = 0;
  TESSERA_ASSIGN_OR_RETURN(std::string y, b.node(l, OpKind::kReshape, {x}, reshape));
  b.set_top(l, 0, y);
  return Status::ok();
}

}  // namespace tessera::caffe_import
