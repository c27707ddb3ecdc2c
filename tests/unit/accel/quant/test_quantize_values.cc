// quantize_values on every path this build and CPU have gives quantize_value's bytes: half
// steps (round half to even), the clamp's edges, huge values, infinities, NaN, signed zeros and
// denormals, at every tail length of the vector loops.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "accel/quant/quantize.h"

namespace tessera {
namespace {

std::vector<float> edge_values() {
  std::vector<float> v;
  for (int half = -300; half <= 300; ++half) v.push_back(0.5f * static_cast<float>(half));  // -150 .. 150 by 0.5
  for (float x : {127.49f, 127.5f, 127.51f, -128.49f, -128.5f, -128.51f, 0.49999997f, -0.49999997f, 1e9f, -1e9f, 3e38f,
                  -3e38f, 2147483648.0f, -2147483904.0f, 1e-40f, -1e-40f, 0.0f, -0.0f}) {
    v.push_back(x);
  }
  v.push_back(std::numeric_limits<float>::infinity());
  v.push_back(-std::numeric_limits<float>::infinity());
  v.push_back(std::numeric_limits<float>::quiet_NaN());
  v.push_back(-std::numeric_limits<float>::quiet_NaN());
  v.push_back(std::numeric_limits<float>::max());
  v.push_back(std::numeric_limits<float>::lowest());
  v.push_back(std::numeric_limits<float>::denorm_min());
  std::mt19937 rng(26);
  std::uniform_real_distribution<float> dist(-200.0f, 200.0f);
  for (int i = 0; i < 1000; ++i) v.push_back(dist(rng));
  return v;
}

std::vector<quant::QuantizePath> paths() {
  std::vector<quant::QuantizePath> out;
  for (auto p : {quant::QuantizePath::kScalar, quant::QuantizePath::kAvx2, quant::QuantizePath::kAvx512}) {
    if (quant::quantize_path_available(p)) out.push_back(p);
  }
  return out;
}

TEST(QuantizeValues, ScalarRoundsHalfToEvenClampsAndMapsNanToZero) {
  EXPECT_EQ(quant::quantize_value(2.5f, 1.0f), 2);
  EXPECT_EQ(quant::quantize_value(3.5f, 1.0f), 4);
  EXPECT_EQ(quant::quantize_value(-2.5f, 1.0f), -2);
  EXPECT_EQ(quant::quantize_value(127.5f, 1.0f), 127);
  EXPECT_EQ(quant::quantize_value(-128.5f, 1.0f), -128);
  EXPECT_EQ(quant::quantize_value(std::numeric_limits<float>::infinity(), 1.0f), 127);
  EXPECT_EQ(quant::quantize_value(-std::numeric_limits<float>::infinity(), 1.0f), -128);
  EXPECT_EQ(quant::quantize_value(std::numeric_limits<float>::quiet_NaN(), 1.0f), 0);
}

TEST(QuantizeValues, EveryPathMatchesQuantizeValueOnEdgeValues) {
  const std::vector<float> values = edge_values();
  for (const float scale : {1.0f, 0.5f, 1.0f / 127.0f, 0.3f, 2.7f, 1e-30f}) {
    std::vector<int8_t> want(values.size());
    for (size_t i = 0; i < values.size(); ++i) want[i] = quant::quantize_value(values[i], scale);
    for (const auto path : paths()) {
      std::vector<int8_t> got(values.size(), 99);
      quant::quantize_values_on(path, values.data(), values.size(), scale, got.data());
      for (size_t i = 0; i < values.size(); ++i) {
        ASSERT_EQ(got[i], want[i]) << "path " << static_cast<int>(path) << " scale " << scale << " x " << values[i];
      }
    }
  }
}

TEST(QuantizeValues, EveryTailLengthWritesExactlyNBytes) {
  const std::vector<float> values = edge_values();
  for (const auto path : paths()) {
    for (size_t n = 0; n <= 70; ++n) {
      std::vector<int8_t> got(n + 8, 99);
      quant::quantize_values_on(path, values.data() + 250, n, 1.0f, got.data());
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], quant::quantize_value(values[250 + i], 1.0f)) << n;
      for (size_t i = n; i < n + 8; ++i) ASSERT_EQ(got[i], 99) << "path " << static_cast<int>(path) << " n " << n;
    }
  }
  std::vector<int8_t> best(values.size()), scalar(values.size());
  quant::quantize_values(values.data(), values.size(), 0.3f, best.data());
  quant::quantize_values_on(quant::QuantizePath::kScalar, values.data(), values.size(), 0.3f, scalar.data());
  EXPECT_EQ(best, scalar);
}

}  // namespace
}  // namespace tessera
