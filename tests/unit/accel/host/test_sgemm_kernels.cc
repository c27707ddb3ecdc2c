// Every version of the host's float GEMM loops this build and CPU have (portable; NEON on ARM,
// AVX2 on x86-64) against a double-precision sum, within float rounding: the versions add in
// different orders, so they are held to a tolerance, not to bits. Shapes of the host stage's fully-connected layers
// (a few images x 10..512 outputs x up to 3136 inputs) and of the reference conv's GEMMs, with
// ragged sizes for the loops' tails.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <ostream>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "accel/host/reference_gemm.h"

namespace tessera::host {
// gtest names a parameter by its value (and CTest's test names carry it): the version's name,
// not its address, which would change from run to run. Outside the anonymous namespace, where
// argument-dependent lookup finds it.
void PrintTo(const SgemmKernels* version, std::ostream* os) { *os << version->name; }

namespace {

std::vector<const SgemmKernels*> every_version() {
  std::vector<const SgemmKernels*> all{&portable_sgemm_kernels()};
  if (const SgemmKernels* neon = neon_sgemm_kernels()) all.push_back(neon);
  if (const SgemmKernels* avx2 = avx2_sgemm_kernels()) all.push_back(avx2);
  return all;
}

class SgemmKernelsTest : public ::testing::TestWithParam<const SgemmKernels*> {
 protected:
  std::vector<float> random_floats(size_t n) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = normal(rng_);
    return v;
  }
  std::mt19937 rng_{7u};
};

// C = A * B (A m x k, B k x n) in double, with the sum of |products| that bounds float rounding.
struct Exact {
  std::vector<double> value, magnitude;
};
Exact exact_product(int64_t m, int64_t n, int64_t k, const std::vector<float>& a, const std::vector<float>& b,
                    bool b_transposed) {
  Exact e{std::vector<double>(static_cast<size_t>(m * n)), std::vector<double>(static_cast<size_t>(m * n))};
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0, mag = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        const double prod = static_cast<double>(a[static_cast<size_t>(i * k + p)]) *
                            b[static_cast<size_t>(b_transposed ? j * k + p : p * n + j)];
        sum += prod;
        mag += std::fabs(prod);
      }
      e.value[static_cast<size_t>(i * n + j)] = sum;
      e.magnitude[static_cast<size_t>(i * n + j)] = mag;
    }
  }
  return e;
}

// |got - exact| <= k * 2^-23 * sum |products| (+ a hair for the denormals 32-bit NEON flushes).
void expect_within_rounding(const std::vector<float>& got, const Exact& want, int64_t k, const std::string& what) {
  const double eps = std::ldexp(1.0, -23) * static_cast<double>(k);
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_LE(std::fabs(got[i] - want.value[i]), eps * want.magnitude[i] + 1e-30)
        << what << " element " << i << ": got " << got[i] << ", exact " << want.value[i];
  }
}

TEST_P(SgemmKernelsTest, FullyConnectedShapesWithinFloatRounding) {
  const SgemmKernels& kernels = *GetParam();
  for (const auto& [m, n, k] :
       {std::tuple<int64_t, int64_t, int64_t>{1, 10, 784}, {3, 128, 3136}, {8, 512, 257}, {5, 17, 15}, {2, 3, 1}}) {
    const std::vector<float> a = random_floats(static_cast<size_t>(m * k));
    const std::vector<float> bt = random_floats(static_cast<size_t>(n * k));
    std::vector<float> c(static_cast<size_t>(m * n), 0.0f);
    sgemm_bt_accumulate(m, n, k, a.data(), k, bt.data(), k, c.data(), n, kernels);
    expect_within_rounding(c, exact_product(m, n, k, a, bt, true), k,
                           "bt " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k));
  }
}

TEST_P(SgemmKernelsTest, BlockedGemmWithinFloatRounding) {
  const SgemmKernels& kernels = *GetParam();
  for (const auto& [m, n, k] :
       {std::tuple<int64_t, int64_t, int64_t>{16, 300, 27}, {9, 257, 130}, {1, 5, 3}, {4, 64, 1}}) {
    const std::vector<float> a = random_floats(static_cast<size_t>(m * k));
    const std::vector<float> b = random_floats(static_cast<size_t>(k * n));
    std::vector<float> c(static_cast<size_t>(m * n), 0.0f);
    sgemm_accumulate(m, n, k, a.data(), k, b.data(), n, c.data(), n, kernels);
    expect_within_rounding(c, exact_product(m, n, k, a, b, false), k,
                           "ab " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k));
  }
}

// The version that runs by default is one of those checked above.
TEST(SgemmKernelsSelection, TheDefaultIsAVersionChecked) {
  bool listed = false;
  for (const SgemmKernels* k : every_version()) listed = listed || k == &sgemm_kernels();
  EXPECT_TRUE(listed) << sgemm_kernels().name;
#if defined(__aarch64__)
  EXPECT_NE(neon_sgemm_kernels(), nullptr);
#endif
}

INSTANTIATE_TEST_SUITE_P(EveryVersion, SgemmKernelsTest, ::testing::ValuesIn(every_version()),
                         [](const ::testing::TestParamInfo<const SgemmKernels*>& version) {
                           return std::string(version.param->name);
                         });

}  // namespace
}  // namespace tessera::host
