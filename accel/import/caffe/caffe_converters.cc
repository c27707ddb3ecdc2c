// The checks and field readers the Caffe layer converters share (caffe_converters.h).
#include <string>

#include "accel/graph/op_shapes.h"
#include "accel/import/caffe/caffe_converters.h"

namespace tessera::caffe_import {

Status expect_counts(const Layer& l, int min_bottoms, int max_bottoms, int tops) {
  const int b = l.p.bottom_size();
  if (b < min_bottoms || b > max_bottoms) {
    return l.error(
        "has " + std::to_string(b) + " bottom(s), expected " +
        (min_bottoms == max_bottoms ? std::to_string(min_bottoms) : std::to_string(min_bottoms) + " or more"));
  }
  if (tops >= 0 && l.p.top_size() != tops) {
    return l.error("has " + std::to_string(l.p.top_size()) + " top(s), expected " + std::to_string(tops));
  }
  return Status::ok();
}

Result<int> layer_axis(const Layer& l, int axis, int rank, const char* field) {
  auto a = normalize_axis(axis, rank);
  if (!a)
    return l.error(std::string(field) + " " + std::to_string(axis) + " is out of range for a rank-" +
                   std::to_string(rank) + " input");
  return *a;
}

Tensor scalar(float v) { return Tensor(Shape{1}, {v}); }

Result<std::array<int, 2>> spatial(const Layer& l, const char* name, bool has_h, uint32_t h, bool has_w, uint32_t w,
                                   const std::vector<uint32_t>& plain, int fallback, bool required) {
  if (has_h || has_w) {
    if (!(has_h && has_w)) return l.error(std::string("set both ") + name + "_h and " + name + "_w, or " + name);
    if (!plain.empty()) return l.error(std::string("set either ") + name + " or " + name + "_h/" + name + "_w");
    return std::array<int, 2>{static_cast<int>(h), static_cast<int>(w)};
  }
  if (plain.empty()) {
    if (required) return l.error(std::string(name) + " is required");
    return std::array<int, 2>{fallback, fallback};
  }
  if (plain.size() > 2) {
    return l.unsupported(std::string(name) + " has " + std::to_string(plain.size()) +
                         " values; only 2-D (NCHW) layers are supported");
  }
  return std::array<int, 2>{static_cast<int>(plain[0]), static_cast<int>(plain.back())};
}

}  // namespace tessera::caffe_import
