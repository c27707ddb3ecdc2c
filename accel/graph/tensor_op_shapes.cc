// Shape rules of the layout, selection and normalisation operators (op_shapes.h).
#include <algorithm>
#include <string>

#include "accel/graph/op_shapes.h"
#include "accel/graph/shape_messages.h"

namespace tessera {
namespace {

using shape_messages::invalid;
using shape_messages::rank_of;
using shape_messages::str;

std::string list(const std::vector<int64_t>& v) { return shape_to_string(v); }

}  // namespace

Result<Shape> transpose_output_shape(const Shape& x, const std::vector<int>& perm) {
  if (perm.size() != x.size()) {
    return invalid("perm has " + std::to_string(perm.size()) + " entries for an input of rank " +
                   std::to_string(x.size()) + " " + str(x));
  }
  std::vector<bool> seen(x.size(), false);
  Shape out(x.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    const int p = perm[i];
    if (p < 0 || p >= rank_of(x) || seen[static_cast<size_t>(p)]) {
      return invalid("perm is not a permutation of [0, " + std::to_string(x.size()) + ")");
    }
    seen[static_cast<size_t>(p)] = true;
    out[i] = x[static_cast<size_t>(p)];
  }
  return out;
}

Result<SliceWindow> slice_window(const Shape& x, const SliceAttrs& attrs) {
  const size_t n = attrs.starts.size();
  if (attrs.ends.size() != n || (!attrs.axes.empty() && attrs.axes.size() != n) ||
      (!attrs.steps.empty() && attrs.steps.size() != n)) {
    return invalid("starts, ends, axes and steps differ in length");
  }
  SliceWindow w;
  w.start.assign(x.size(), 0);
  w.step.assign(x.size(), 1);
  w.count = x;
  std::vector<bool> seen(x.size(), false);
  for (size_t i = 0; i < n; ++i) {
    const int64_t axis_in = attrs.axes.empty() ? static_cast<int64_t>(i) : attrs.axes[i];
    if (axis_in < -rank_of(x) || axis_in >= rank_of(x)) {
      return invalid("axis " + std::to_string(axis_in) + " is out of range for " + str(x));
    }
    const auto axis = static_cast<size_t>(axis_in < 0 ? axis_in + rank_of(x) : axis_in);
    if (seen[axis]) return invalid("axis " + std::to_string(axis) + " is sliced twice");
    seen[axis] = true;
    const int64_t dim = x[axis];
    const int64_t step = attrs.steps.empty() ? 1 : attrs.steps[i];
    if (step == 0) return invalid("step 0 on axis " + std::to_string(axis));
    auto resolve = [&](int64_t v, int64_t lo, int64_t hi) {
      if (v < 0) v += dim;
      return std::clamp(v, lo, hi);
    };
    int64_t start = 0, end = 0;
    if (step > 0) {
      start = resolve(attrs.starts[i], 0, dim);
      end = resolve(attrs.ends[i], 0, dim);
    } else {
      start = resolve(attrs.starts[i], 0, dim - 1);
      end = resolve(attrs.ends[i], -1, dim - 1);
      if (attrs.ends[i] < -dim) end = -1;
    }
    const int64_t span = step > 0 ? end - start : start - end;
    const int64_t abs_step = step > 0 ? step : -step;
    w.start[axis] = start;
    w.step[axis] = step;
    w.count[axis] = span <= 0 ? 0 : (span + abs_step - 1) / abs_step;
  }
  return w;
}

Result<Shape> slice_output_shape(const Shape& x, const SliceAttrs& attrs) {
  TESSERA_ASSIGN_OR_RETURN(const SliceWindow w, slice_window(x, attrs));
  return w.count;
}

Result<Shape> gather_output_shape(const Shape& x, const GatherAttrs& attrs) {
  if (x.empty()) return invalid("input must have rank >= 1");
  TESSERA_ASSIGN_OR_RETURN(const int axis, normalize_axis(attrs.axis, rank_of(x)));
  if (static_cast<int64_t>(attrs.indices.size()) != shape_elements(attrs.indices_shape)) {
    return invalid("indices " + str(attrs.indices_shape) + " hold " + std::to_string(attrs.indices.size()) + " values");
  }
  const int64_t dim = x[static_cast<size_t>(axis)];
  for (int64_t i : attrs.indices) {
    if (i < -dim || i >= dim) {
      return invalid("index " + std::to_string(i) + " is out of range for dim " + std::to_string(axis) + " of " +
                     str(x));
    }
  }
  Shape out(x.begin(), x.begin() + axis);
  out.insert(out.end(), attrs.indices_shape.begin(), attrs.indices_shape.end());
  out.insert(out.end(), x.begin() + axis + 1, x.end());
  return out;
}

Result<Shape> pad_output_shape(const Shape& x, const PadAttrs& attrs) {
  if (attrs.pads.size() != 2 * x.size()) {
    return invalid("pads has " + std::to_string(attrs.pads.size()) + " entries; an input of rank " +
                   std::to_string(x.size()) + " needs " + std::to_string(2 * x.size()));
  }
  Shape out = x;
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t b = attrs.pads[i], e = attrs.pads[i + x.size()];
    if (b < 0 || e < 0) return invalid("negative pads " + list(attrs.pads) + " are not supported");
    out[i] += b + e;
  }
  return out;
}

Result<std::vector<int>> reduce_axes(const Shape& x, const ReduceAttrs& attrs) {
  std::vector<int> axes;
  if (attrs.axes.empty()) {
    for (int i = 0; i < rank_of(x); ++i) axes.push_back(i);
    return axes;
  }
  for (int a : attrs.axes) {
    TESSERA_ASSIGN_OR_RETURN(const int ax, normalize_axis(a, rank_of(x)));
    if (std::find(axes.begin(), axes.end(), ax) != axes.end()) {
      return invalid("axis " + std::to_string(ax) + " is listed twice");
    }
    axes.push_back(ax);
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

Result<Shape> reduce_output_shape(const Shape& x, const ReduceAttrs& attrs) {
  TESSERA_ASSIGN_OR_RETURN(const std::vector<int> axes, reduce_axes(x, attrs));
  Shape out;
  for (int i = 0; i < rank_of(x); ++i) {
    const bool reduced = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (!reduced) {
      out.push_back(x[static_cast<size_t>(i)]);
    } else if (attrs.keep_dims) {
      out.push_back(1);
    }
  }
  return out;
}

Result<Shape> layer_norm_output_shape(const Shape& x, const Shape& scale, const Shape* bias,
                                      const LayerNormAttrs& attrs) {
  if (x.empty()) return invalid("input must have rank >= 1");
  TESSERA_ASSIGN_OR_RETURN(const int axis, normalize_axis(attrs.axis, rank_of(x)));
  const Shape tail(x.begin() + axis, x.end());
  auto fits = [&](const Shape& p) {
    return p == tail || (shape_elements(p) == shape_elements(tail) && p.size() <= tail.size() &&
                         std::equal(p.rbegin(), p.rend(), tail.rbegin()));
  };
  if (!fits(scale)) return invalid("scale " + str(scale) + " does not match the normalised dims " + str(tail));
  if (bias != nullptr && !fits(*bias)) {
    return invalid("bias " + str(*bias) + " does not match the normalised dims " + str(tail));
  }
  if (!(attrs.epsilon >= 0.0f)) return invalid("epsilon must be >= 0");
  return x;
}

}  // namespace tessera
