// Helpers shared by the reference-kernel tests (test_reference_ops.cc) and the reference
// executor's tests (test_reference_executor.cc): tensor comparisons, random tensors, pool attrs.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "accel/common/status.h"
#include "accel/graph/graph.h"

namespace tessera::host::reference_test {

// Checks shape and every value (absolute tolerance, relative for large values).
inline void expect_tensor(const Result<Tensor>& r, const Shape& shape, const std::vector<float>& values,
                          float tol = 1e-5f) {
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->shape, shape);
  ASSERT_EQ(r->data.size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_NEAR(r->data[i], values[i], tol * std::max(1.0f, std::fabs(values[i]))) << "at " << i;
  }
}

inline void expect_same(const Tensor& got, const Tensor& want, float tol = 1e-4f) {
  ASSERT_EQ(got.shape, want.shape);
  for (size_t i = 0; i < want.data.size(); ++i) {
    ASSERT_NEAR(got.data[i], want.data[i], tol * std::max(1.0f, std::fabs(want.data[i]))) << "at " << i;
  }
}

// Uniform values in [-1, 1).
inline Tensor random_tensor(Shape shape, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Tensor t(std::move(shape));
  for (float& v : t.data) v = dist(rng);
  return t;
}

// A square k x k pool with stride s and the same padding on every side.
inline PoolAttrs pool(int k, int s, int pad, bool ceil_mode = false, bool include_pad = false) {
  PoolAttrs a;
  a.kernel = {k, k};
  a.stride = {s, s};
  a.pads = {pad, pad, pad, pad};
  a.ceil_mode = ceil_mode;
  a.count_include_pad = include_pad;
  return a;
}

}  // namespace tessera::host::reference_test
