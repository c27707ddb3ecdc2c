#include "accel/graph/tensor.h"

#include <limits>

namespace tessera {

int64_t shape_elements(const Shape& shape) {
  for (int64_t d : shape) {
    if (d == 0) return 0;
  }
  // A count past int64 (a hostile file's dims, found by fuzz_caffe_import) saturates: no tensor
  // that large exists, so every size check against it fails cleanly.
  int64_t n = 1;
  for (int64_t d : shape) {
    if (__builtin_mul_overflow(n, d, &n)) return std::numeric_limits<int64_t>::max();
  }
  return n;
}

std::string shape_to_string(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

}  // namespace tessera
