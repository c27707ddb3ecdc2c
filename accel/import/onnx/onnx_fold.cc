#include "accel/import/onnx/onnx_fold.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "accel/graph/op_shapes.h"
#include "accel/import/onnx/onnx_node.h"
#include "accel/import/onnx/onnx_tensor.h"

namespace tessera::onnx_import {
namespace {

using tessera::onnx::AttributeProto;
using tessera::onnx::NodeProto;
using tessera::onnx::TensorProto;

bool is_float_type(int64_t type) {
  constexpr int64_t kBfloat16 = 16;  // not in the trimmed onnx.proto Tessera compiles
  return type == TensorProto::FLOAT || type == TensorProto::DOUBLE || type == TensorProto::FLOAT16 || type == kBfloat16;
}

int64_t to_int(double v) {
  if (v >= 9.2e18) return std::numeric_limits<int64_t>::max();
  if (v <= -9.2e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

std::vector<int64_t> ints_of(const ConstValue& v) {
  std::vector<int64_t> out;
  out.reserve(v.values.size());
  for (double d : v.values) out.push_back(to_int(d));
  return out;
}

std::vector<int64_t> row_major_strides(const Shape& s) {
  std::vector<int64_t> strides(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) strides[d - 1] = strides[d] * s[d];
  return strides;
}

// Folding one node: its attributes, operands and errors naming it.
class Folder {
 public:
  Folder(const NodeProto& node, const std::vector<const ConstValue*>& operands, int64_t opset)
      : node_(node), ops_(operands), opset_(opset) {}

  Status error(const std::string& what) const { return Status::invalid_argument(describe_node(node_) + ": " + what); }

  const ConstValue* operand(size_t i) const { return i < ops_.size() ? ops_[i] : nullptr; }

  Result<const ConstValue*> required(size_t i) const {
    const ConstValue* v = operand(i);
    if (v == nullptr) return error("operand " + std::to_string(i) + " is missing");
    return v;
  }

  const AttributeProto* attr(const std::string& name) const {
    for (const AttributeProto& a : node_.attribute()) {
      if (a.name() == name) return &a;
    }
    return nullptr;
  }
  int64_t attr_int(const std::string& name, int64_t fallback) const {
    const AttributeProto* a = attr(name);
    return a ? a->i() : fallback;
  }
  std::vector<int64_t> attr_ints(const std::string& name) const {
    const AttributeProto* a = attr(name);
    return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>{};
  }

  Result<int> axis_of(int64_t axis, size_t rank, bool allow_rank = false) const {
    auto a = normalize_axis(static_cast<int>(axis), static_cast<int>(rank), allow_rank);
    if (!a) return error(a.status().message());
    return *a;
  }

  // Elementwise over any number of broadcast operands.
  Result<ConstValue> broadcast(const std::vector<const ConstValue*>& in, bool integer,
                               const std::function<double(const std::vector<double>&)>& f) const {
    Shape out;
    for (const ConstValue* v : in) {
      auto s = broadcast_shape(out, v->shape);
      if (!s) return error(s.status().message());
      out = *s;
    }
    ConstValue y{out, std::vector<double>(static_cast<size_t>(shape_elements(out))), integer};
    std::vector<std::vector<int64_t>> strides;
    for (const ConstValue* v : in) {
      std::vector<int64_t> st(out.size(), 0);
      const std::vector<int64_t> own = row_major_strides(v->shape);
      const size_t off = out.size() - v->shape.size();
      for (size_t d = 0; d < v->shape.size(); ++d) st[d + off] = v->shape[d] == 1 ? 0 : own[d];
      strides.push_back(st);
    }
    std::vector<int64_t> index(out.size(), 0);
    std::vector<double> args(in.size());
    for (size_t e = 0; e < y.values.size(); ++e) {
      for (size_t k = 0; k < in.size(); ++k) {
        int64_t at = 0;
        for (size_t d = 0; d < out.size(); ++d) at += index[d] * strides[k][d];
        args[k] = in[k]->values[static_cast<size_t>(at)];
      }
      y.values[e] = f(args);
      for (size_t d = out.size(); d-- > 0;) {
        if (++index[d] < out[d]) break;
        index[d] = 0;
      }
    }
    return y;
  }

  Result<ConstValue> binary(const std::function<double(double, double)>& f, bool logical) const {
    TESSERA_ASSIGN_OR_RETURN(const ConstValue* a, required(0));
    TESSERA_ASSIGN_OR_RETURN(const ConstValue* b, required(1));
    const bool integer = logical || (a->integer && b->integer);
    auto g = [&](const std::vector<double>& v) {
      double r = f(v[0], v[1]);
      return integer && !logical ? std::trunc(r) : r;
    };
    return broadcast({a, b}, integer, g);
  }

  Result<ConstValue> unary(const std::function<double(double)>& f, bool keep_integer) const {
    TESSERA_ASSIGN_OR_RETURN(const ConstValue* a, required(0));
    ConstValue y = *a;
    for (double& v : y.values) v = f(v);
    y.integer = a->integer && keep_integer;
    return y;
  }

  // Axes from operand `index` (opset >= 13 for Squeeze/Unsqueeze, 18 for reductions) or the attribute.
  std::vector<int64_t> axes(size_t index) const {
    if (const ConstValue* v = operand(index)) return ints_of(*v);
    return attr_ints("axes");
  }

  Result<ConstValue> gather() const {
    TESSERA_ASSIGN_OR_RETURN(const ConstValue* x, required(0));
    TESSERA_ASSIGN_OR_RETURN(const ConstValue* idx, required(1));
    GatherAttrs g;
    TESSERA_ASSIGN_OR_RETURN(g.axis, axis_of(attr_int("axis", 0), x->shape.size()));
    g.indices = ints_of(*idx);
    g.indices_shape = idx->shape;
    auto shape = gather_output_shape(x->shape, g);
    if (!shape) return error(shape.status().message());
    const auto axis = static_cast<size_t>(g.axis);
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < axis; ++d) outer *= x->shape[d];
    for (size_t d = axis + 1; d < x->shape.size(); ++d) inner *= x->shape[d];
    const int64_t dim = x->shape[axis];
    ConstValue y{*shape, {}, x->integer};
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i : g.indices) {
        const int64_t at = (o * dim + (i < 0 ? i + dim : i)) * inner;
        y.values.insert(y.values.end(), x->values.begin() + at, x->values.begin() + at + inner);
      }
    }
    return y;
  }

  Result<ConstValue> unsqueeze() const {
    TESSERA_ASSIGN_OR_RETURN(const ConstValue* x, required(0));
    const std::vector<int64_t> ax = axes(opset_ >= 13 ? 1 : 99);
    const size_t rank = x->shape.size() + ax.size();
    std::vector<bool> added(rank, false);
    for (int64_t a : ax) {
      TESSERA_ASSIGN_OR_RETURN(const int n, axis_of(a, rank));
      if (added[static_cast<size_t>(n)]) return error("axis " + std::to_string(n) + " is listed twice");
      added[static_cast<size_t>(n)] = true;
    }
    ConstValue y = *x;
    y.shape.clear();
    size_t next = 0;
    for (size_t d = 0; d < rank; ++d) y.shape.push_back(added[d] ? 1 : x->shape[next++]);
    return y;
  }

  Result<ConstValue> squeeze() const {
    TESSERA_ASSIGN_OR_RETURN(const ConstValue* x, required(0));
    const std::vector<int64_t> ax = axes(opset_ >= 13 ? 1 : 99);
    std::vector<bool> drop(x->shape.size(), ax.empty());
    for (int64_t a : ax) {
      TESSERA_ASSIGN_OR_RETURN(const int n, axis_of(a, x->shape.size()));
      if (x->shape[static_cast<size_t>(n)] != 1) return error("squeezed axis " + std::to_string(n) + " is not 1");
      drop[static_cast<size_t>(n)] = true;
    }
    ConstValue y = *x;
    y.shape.clear();
    for (size_t d = 0; d < x->shape.size(); ++d) {
      if (!(drop[d] && x->shape[d] == 1)) y.shape.push_back(x->shape[d]);
    }
    return y;
  }

  Result<ConstValue> concat() const {
    if (ops_.empty()) return error("has no operands");
    std::vector<Shape> shapes;
    bool integer = true;
    for (size_t i = 0; i < ops_.size(); ++i) {
      TESSERA_ASSIGN_OR_RETURN(const ConstValue* v, required(i));
      shapes.push_back(v->shape);
      integer = integer && v->integer;
    }
    auto shape = concat_output_shape(shapes, static_cast<int>(attr_int("axis", 0)));
    if (!shape) return error(shape.status().message());
    TESSERA_ASSIGN_OR_RETURN(const int axis, axis_of(attr_int("axis", 0), shapes[0].size()));
    int64_t outer = 1;
    for (int d = 0; d < axis; ++d) outer *= shapes[0][static_cast<size_t>(d)];
    ConstValue y{*shape, {}, integer};
    for (int64_t o = 0; o < outer; ++o) {
      for (const ConstValue* v : ops_) {
        const int64_t block = outer == 0 ? 0 : static_cast<int64_t>(v->values.size()) / outer;
        y.values.insert(y.values.end(), v->values.begin() + o * block, v->values.begin() + (o + 1) * block);
      }
    }
    return y;
  }

  Result<ConstValue> range() const {
    TESSERA_ASSIGN_OR_RETURN(const ConstValue* start, required(0));
    TESSERA_ASSIGN_OR_RETURN(const ConstValue* limit, required(1));
    TESSERA_ASSIGN_OR_RETURN(const ConstValue* delta, required(2));
    if (start->values.size() != 1 || limit->values.size() != 1 || delta->values.size() != 1) {
      return error("start, limit and delta must be scalars");
    }
    const double s = start->values[0], l = limit->values[0], d = delta->values[0];
    if (d == 0) return error("delta is 0");
    const double n = std::max(0.0, std::ceil((l - s) / d));
    if (n > 1e7) return error("the range has " + std::to_string(n) + " elements");
    ConstValue y{{static_cast<int64_t>(n)}, {}, start->integer};
    for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) y.values.push_back(s + static_cast<double>(i) * d);
    return y;
  }

  Result<ConstValue> where() const {
    TESSERA_ASSIGN_OR_RETURN(const ConstValue* c, required(0));
    TESSERA_ASSIGN_OR_RETURN(const ConstValue* x, required(1));
    TESSERA_ASSIGN_OR_RETURN(const ConstValue* y, required(2));
    return broadcast({c, x, y}, x->integer && y->integer,
                     [](const std::vector<double>& v) { return v[0] != 0 ? v[1] : v[2]; });
  }

  Result<ConstValue> expand() const {
    TESSERA_ASSIGN_OR_RETURN(const ConstValue* x, required(0));
    TESSERA_ASSIGN_OR_RETURN(const ConstValue* s, required(1));
    ConstValue ones{Shape{}, {}, x->integer};
    for (int64_t d : ints_of(*s)) {
      if (d < 0) return error("negative dim in the target shape");
      ones.shape.push_back(d);
    }
    ones.values.assign(static_cast<size_t>(shape_elements(ones.shape)), 0.0);
    return broadcast({x, &ones}, x->integer, [](const std::vector<double>& v) { return v[0]; });
  }

  Result<ConstValue> constant_of_shape() const {
    TESSERA_ASSIGN_OR_RETURN(const ConstValue* s, required(0));
    ConstValue y{Shape{}, {}, false};
    double fill = 0;
    if (const AttributeProto* a = attr("value"); a != nullptr && a->has_t()) {
      TESSERA_ASSIGN_OR_RETURN(ConstValue v, decode_const(a->t(), describe_node(node_)));
      if (v.values.size() != 1) return error("'value' must hold one element");
      fill = v.values[0];
      y.integer = v.integer;
    }
    for (int64_t d : ints_of(*s)) {
      if (d < 0) return error("negative dim in the shape");
      y.shape.push_back(d);
    }
    const int64_t n = shape_elements(y.shape);
    if (n > (int64_t{1} << 26)) return error("the constant would hold " + std::to_string(n) + " elements");
    y.values.assign(static_cast<size_t>(n), fill);
    return y;
  }

  Result<ConstValue> slice() const {
    TESSERA_ASSIGN_OR_RETURN(const ConstValue* x, required(0));
    SliceAttrs s;
    if (opset_ < 10) {
      s.starts = attr_ints("starts");
      s.ends = attr_ints("ends");
      s.axes = attr_ints("axes");
    } else {
      TESSERA_ASSIGN_OR_RETURN(const ConstValue* starts, required(1));
      TESSERA_ASSIGN_OR_RETURN(const ConstValue* ends, required(2));
      s.starts = ints_of(*starts);
      s.ends = ints_of(*ends);
      if (const ConstValue* a = operand(3)) s.axes = ints_of(*a);
      if (const ConstValue* st = operand(4)) s.steps = ints_of(*st);
    }
    auto w = slice_window(x->shape, s);
    if (!w) return error(w.status().message());
    const std::vector<int64_t> strides = row_major_strides(x->shape);
    ConstValue y{w->count, {}, x->integer};
    const int64_t n = shape_elements(w->count);
    std::vector<int64_t> index(x->shape.size(), 0);
    for (int64_t e = 0; e < n; ++e) {
      int64_t at = 0;
      for (size_t d = 0; d < index.size(); ++d) at += (w->start[d] + index[d] * w->step[d]) * strides[d];
      y.values.push_back(x->values[static_cast<size_t>(at)]);
      for (size_t d = index.size(); d-- > 0;) {
        if (++index[d] < w->count[d]) break;
        index[d] = 0;
      }
    }
    return y;
  }

  Result<ConstValue> reshape() const {
    TESSERA_ASSIGN_OR_RETURN(const ConstValue* x, required(0));
    TESSERA_ASSIGN_OR_RETURN(const ConstValue* s, required(1));
    ReshapeAttrs r{ints_of(*s), attr_int("allowzero", 0) != 0};
    auto shape = reshape_output_shape(x->shape, r);
    if (!shape) return error(shape.status().message());
    ConstValue y = *x;
    y.shape = *shape;
    return y;
  }

  Result<ConstValue> transpose() const {
    TESSERA_ASSIGN_OR_RETURN(const ConstValue* x, required(0));
    std::vector<int> perm;
    for (int64_t p : attr_ints("perm")) perm.push_back(static_cast<int>(p));
    if (perm.empty()) {
      for (size_t d = x->shape.size(); d-- > 0;) perm.push_back(static_cast<int>(d));
    }
    auto shape = transpose_output_shape(x->shape, perm);
    if (!shape) return error(shape.status().message());
    const std::vector<int64_t> strides = row_major_strides(x->shape);
    ConstValue y{*shape, {}, x->integer};
    const int64_t n = shape_elements(*shape);
    std::vector<int64_t> index(shape->size(), 0);
    for (int64_t e = 0; e < n; ++e) {
      int64_t at = 0;
      for (size_t d = 0; d < index.size(); ++d) at += index[d] * strides[static_cast<size_t>(perm[d])];
      y.values.push_back(x->values[static_cast<size_t>(at)]);
      for (size_t d = index.size(); d-- > 0;) {
        if (++index[d] < (*shape)[d]) break;
        index[d] = 0;
      }
    }
    return y;
  }

  Result<ConstValue> cast() const {
    TESSERA_ASSIGN_OR_RETURN(const ConstValue* x, required(0));
    const int64_t to = attr_int("to", TensorProto::FLOAT);
    ConstValue y = *x;
    y.integer = !is_float_type(to);
    if (to == TensorProto::BOOL) {
      for (double& v : y.values) v = v != 0 ? 1 : 0;
    } else if (to == TensorProto::FLOAT || to == TensorProto::FLOAT16) {
      for (double& v : y.values) v = static_cast<float>(v);
    } else if (y.integer) {
      for (double& v : y.values) v = std::trunc(v);
    }
    return y;
  }

  Result<ConstValue> scatter_nd() const {
    TESSERA_ASSIGN_OR_RETURN(const ConstValue* x, required(0));
    TESSERA_ASSIGN_OR_RETURN(const ConstValue* idx, required(1));
    TESSERA_ASSIGN_OR_RETURN(const ConstValue* upd, required(2));
    if (idx->shape.empty()) return error("indices must have rank >= 1");
    const auto k = static_cast<size_t>(idx->shape.back());
    if (k > x->shape.size()) return error("index tuples are longer than the data's rank");
    const std::vector<int64_t> strides = row_major_strides(x->shape);
    int64_t slice = 1;
    for (size_t d = k; d < x->shape.size(); ++d) slice *= x->shape[d];
    const size_t tuples = k == 0 ? 0 : idx->values.size() / k;
    if (upd->values.size() != tuples * static_cast<size_t>(slice)) return error("updates do not fit the indices");
    ConstValue y = *x;
    for (size_t t = 0; t < tuples; ++t) {
      int64_t at = 0;
      for (size_t d = 0; d < k; ++d) {
        int64_t i = to_int(idx->values[t * k + d]);
        if (i < 0) i += x->shape[d];
        if (i < 0 || i >= x->shape[d]) return error("index out of range");
        at += i * strides[d];
      }
      std::copy(upd->values.begin() + static_cast<int64_t>(t) * slice,
                upd->values.begin() + static_cast<int64_t>(t + 1) * slice, y.values.begin() + at);
    }
    return y;
  }

 private:
  const NodeProto& node_;
  const std::vector<const ConstValue*>& ops_;
  int64_t opset_;
};

using Rule = std::function<Result<ConstValue>(const Folder&)>;

const std::map<std::string, Rule>& rules() {
  static const std::map<std::string, Rule> table = {
      {"Identity", [](const Folder& f) { return f.unary([](double v) { return v; }, true); }},
      {"Cast", [](const Folder& f) { return f.cast(); }},
      {"Gather", [](const Folder& f) { return f.gather(); }},
      {"Unsqueeze", [](const Folder& f) { return f.unsqueeze(); }},
      {"Squeeze", [](const Folder& f) { return f.squeeze(); }},
      {"Concat", [](const Folder& f) { return f.concat(); }},
      {"Range", [](const Folder& f) { return f.range(); }},
      {"Where", [](const Folder& f) { return f.where(); }},
      {"Expand", [](const Folder& f) { return f.expand(); }},
      {"ConstantOfShape", [](const Folder& f) { return f.constant_of_shape(); }},
      {"Slice", [](const Folder& f) { return f.slice(); }},
      {"Reshape", [](const Folder& f) { return f.reshape(); }},
      {"Transpose", [](const Folder& f) { return f.transpose(); }},
      {"ScatterND", [](const Folder& f) { return f.scatter_nd(); }},
      {"Add", [](const Folder& f) { return f.binary(std::plus<>(), false); }},
      {"Sub", [](const Folder& f) { return f.binary(std::minus<>(), false); }},
      {"Mul", [](const Folder& f) { return f.binary(std::multiplies<>(), false); }},
      {"Div", [](const Folder& f) { return f.binary(std::divides<>(), false); }},
      {"Mod",
       [](const Folder& f) { return f.binary([](double a, double b) { return a - std::floor(a / b) * b; }, false); }},
      {"Pow", [](const Folder& f) { return f.binary([](double a, double b) { return std::pow(a, b); }, false); }},
      {"Max", [](const Folder& f) { return f.binary([](double a, double b) { return std::max(a, b); }, false); }},
      {"Min", [](const Folder& f) { return f.binary([](double a, double b) { return std::min(a, b); }, false); }},
      {"Equal", [](const Folder& f) { return f.binary([](double a, double b) { return a == b ? 1.0 : 0.0; }, true); }},
      {"Less", [](const Folder& f) { return f.binary([](double a, double b) { return a < b ? 1.0 : 0.0; }, true); }},
      {"Greater", [](const Folder& f) { return f.binary([](double a, double b) { return a > b ? 1.0 : 0.0; }, true); }},
      {"And",
       [](const Folder& f) { return f.binary([](double a, double b) { return a != 0 && b != 0 ? 1.0 : 0.0; }, true); }},
      {"Or",
       [](const Folder& f) { return f.binary([](double a, double b) { return a != 0 || b != 0 ? 1.0 : 0.0; }, true); }},
      {"Not", [](const Folder& f) { return f.unary([](double v) { return v == 0 ? 1.0 : 0.0; }, true); }},
      {"Neg", [](const Folder& f) { return f.unary([](double v) { return -v; }, true); }},
      {"Abs", [](const Folder& f) { return f.unary([](double v) { return std::fabs(v); }, true); }},
      {"Floor", [](const Folder& f) { return f.unary([](double v) { return std::floor(v); }, true); }},
      {"Ceil", [](const Folder& f) { return f.unary([](double v) { return std::ceil(v); }, true); }},
      {"Sqrt", [](const Folder& f) { return f.unary([](double v) { return std::sqrt(v); }, false); }},
  };
  return table;
}

}  // namespace

Result<ConstValue> decode_const(const TensorProto& proto, const std::string& what) {
  ConstValue v;
  v.integer = !is_float_type(proto.data_type());
  if (proto.data_type() == TensorProto::INT64 || proto.data_type() == TensorProto::INT32) {
    TESSERA_ASSIGN_OR_RETURN(const std::vector<int64_t> ints, to_int64_values(proto, what));
    v.shape.assign(proto.dims().begin(), proto.dims().end());
    v.values.assign(ints.begin(), ints.end());
    return v;
  }
  if (proto.data_type() == TensorProto::BOOL) {
    v.shape.assign(proto.dims().begin(), proto.dims().end());
    const std::string& raw = proto.raw_data();
    if (proto.has_raw_data()) {
      for (char c : raw) v.values.push_back(c != 0 ? 1 : 0);
    } else {
      for (int32_t b : proto.int32_data()) v.values.push_back(b != 0 ? 1 : 0);
    }
    if (static_cast<int64_t>(v.values.size()) != shape_elements(v.shape)) {
      return Status::invalid_argument(what + ": a bool tensor's values do not fit its shape");
    }
    return v;
  }
  TESSERA_ASSIGN_OR_RETURN(Tensor t, to_float_tensor(proto, what));
  v.shape = t.shape;
  v.values.assign(t.data.begin(), t.data.end());
  return v;
}

TensorProto encode_const(const ConstValue& value, const std::string& name) {
  TensorProto p;
  p.set_name(name);
  for (int64_t d : value.shape) p.add_dims(d);
  if (value.integer) {
    p.set_data_type(TensorProto::INT64);
    for (double v : value.values) p.add_int64_data(to_int(v));
  } else {
    p.set_data_type(TensorProto::FLOAT);
    for (double v : value.values) p.add_float_data(static_cast<float>(v));
  }
  return p;
}

bool is_foldable(const std::string& op_type) { return rules().count(op_type) != 0; }

Result<ConstValue> fold_node(const NodeProto& node, const std::vector<const ConstValue*>& operands, int64_t opset) {
  const auto it = rules().find(node.op_type());
  if (it == rules().end()) return Status::internal(describe_node(node) + ": not a foldable operator");
  return it->second(Folder(node, operands, opset));
}

}  // namespace tessera::onnx_import
