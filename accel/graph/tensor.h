// Tensor: a dense float32 NCHW-ordered array with its shape. The float reference path and the
// importers use it; the int8 fabric path has its own buffers (kernels/kernel_abi.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tessera {

using Shape = std::vector<int64_t>;

// Number of elements of a shape (1 for a scalar shape {}); INT64_MAX when the count overflows.
int64_t shape_elements(const Shape& shape);
// "[2,3,224,224]"
std::string shape_to_string(const Shape& shape);

struct Tensor {
  Shape shape;
  std::vector<float> data;

  Tensor() = default;
  explicit Tensor(Shape s) : shape(std::move(s)), data(static_cast<size_t>(shape_elements(shape)), 0.0f) {}
  Tensor(Shape s, std::vector<float> d) : shape(std::move(s)), data(std::move(d)) {}

  int64_t elements() const { return static_cast<int64_t>(data.size()); }
  int rank() const { return static_cast<int>(shape.size()); }
  int64_t dim(int i) const { return shape[static_cast<size_t>(i)]; }
  float* ptr() { return data.data(); }
  const float* ptr() const { return data.data(); }
};

}  // namespace tessera
