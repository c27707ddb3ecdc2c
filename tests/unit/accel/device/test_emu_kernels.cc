// Every version of the emulator's inner loops (emu::kernel_paths: AVX-512 VNNI, AVX-VNNI, AVX2,
// NEON dot product, NEON, scalar; one this build or CPU lacks is skipped with the reason) against the ABI's
// arithmetic written out here, on random operands that reach the edges: int8 -128, accumulators
// that wrap, multipliers and shifts over their whole range (products that leave int32 after the
// shift), odd k and ragged widths, and a GEMM of -128/127 everywhere over a k long enough to wrap
// int32. The emulator's bit-exactness against the HLS kernel is tests/bitexact; these pin each
// loop alone.
#include <gtest/gtest.h>

#if defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "accel/device/emu/emu_kernels.h"
#include "kernels/kernel_abi.h"

namespace tessera::emu {
// gtest names a parameter by its value (and CTest's test names carry it): the version's id.
// Outside the anonymous namespace, where argument-dependent lookup finds it.
void PrintTo(const KernelPath& path, std::ostream* os) { *os << path.id; }

namespace {

class EmuKernelsTest : public ::testing::TestWithParam<KernelPath> {
 protected:
  void SetUp() override {
    if (GetParam().kernels == nullptr) GTEST_SKIP() << GetParam().missing;
  }
  const EmuKernels& kernels() const { return *GetParam().kernels; }
  // The weights in the version's packed layout (empty where it reads them unpacked).
  std::vector<int32_t> pack(const std::vector<int8_t>& weights, uint32_t m, uint32_t k) const {
    if (kernels().pack == nullptr) return {};
    std::vector<int32_t> packed(kernels().packed_words(m, k));
    kernels().pack(weights.data(), m, k, packed.data());
    return packed;
  }

  int8_t random_int8() { return static_cast<int8_t>(std::uniform_int_distribution<int>(-128, 127)(rng_)); }
  int32_t random_int32() {
    return std::uniform_int_distribution<int32_t>(std::numeric_limits<int32_t>::min(),
                                                  std::numeric_limits<int32_t>::max())(rng_);
  }
  uint32_t random_below(uint32_t n) { return std::uniform_int_distribution<uint32_t>(0, n - 1)(rng_); }
  std::vector<int8_t> random_bytes(size_t n) {
    std::vector<int8_t> v(n);
    for (int8_t& b : v) b = random_int8();
    return v;
  }
  // A multiplier and shift: often the calibrated kind (M ~ 2^30, S ~ 30..40), sometimes any
  // positive int32 with any shift in the ABI's range (saturating far beyond int32).
  void random_scale(int32_t& multiplier, int32_t& shift) {
    if (random_below(2) == 0) {
      multiplier = (1 << 30) + static_cast<int32_t>(random_below(1u << 30));
      shift = 30 + static_cast<int32_t>(random_below(11));
    } else {
      multiplier = 1 + static_cast<int32_t>(random_below(std::numeric_limits<int32_t>::max()));
      shift = abi::kMinShift + static_cast<int32_t>(random_below(abi::kMaxShift - abi::kMinShift + 1));
    }
  }
  // Activation bounds: none, ReLU, or any int32 pair (the narrowing to int8 then wraps).
  void random_bounds(int32_t& lo, int32_t& hi) {
    switch (random_below(3)) {
      case 0: lo = -128, hi = 127; break;
      case 1: lo = 0, hi = 127; break;
      default: lo = random_int32(), hi = random_int32(); break;
    }
  }

  std::mt19937 rng_{20261125u};
};

uint32_t round_up(uint32_t n, uint32_t m) { return (n + m - 1) / m * m; }

TEST_P(EmuKernelsTest, GemmMatchesTheAbiArithmetic) {
  for (int round = 0; round < 60; ++round) {
    const uint32_t m = 1 + random_below(14), k = 1 + random_below(45), n = 1 + random_below(50);
    const size_t col_stride = round_up(n, kGemmPanel) + kGemmPanel * random_below(2);
    std::vector<int8_t> weights = random_bytes(static_cast<size_t>(m) * k);
    std::vector<int8_t> col(round_up(k, 2) * col_stride, 0);
    for (uint32_t r = 0; r < k; ++r) {
      for (uint32_t j = 0; j < n; ++j) col[r * col_stride + j] = random_int8();
    }
    std::vector<int32_t> bias(m), multiplier(m), shift(m);
    for (uint32_t i = 0; i < m; ++i) {
      bias[i] = random_below(4) == 0 ? random_int32() : static_cast<int32_t>(random_below(20000)) - 10000;
      random_scale(multiplier[i], shift[i]);
    }
    int32_t lo, hi;
    random_bounds(lo, hi);
    const std::vector<int32_t> packed = pack(weights, m, k);
    const size_t out_stride = n + random_below(3);
    std::vector<int8_t> out(m * out_stride, 0x55), want = out;
    for (uint32_t i = 0; i < m; ++i) {
      for (uint32_t j = 0; j < n; ++j) {
        uint32_t acc = 0;
        for (uint32_t p = 0; p < k; ++p) acc += static_cast<uint32_t>(weights[i * k + p] * col[p * col_stride + j]);
        want[i * out_stride + j] = static_cast<int8_t>(
            abi::requantize(wrap_add(static_cast<int32_t>(acc), bias[i]), multiplier[i], shift[i], lo, hi));
      }
    }
    const GemmArgs args{weights.data(),
                        packed.empty() ? nullptr : packed.data(),
                        m,
                        k,
                        col.data(),
                        col_stride,
                        n,
                        RequantParams{bias.data(), multiplier.data(), shift.data(), lo, hi},
                        out.data(),
                        out_stride};
    kernels().gemm(args);
    ASSERT_EQ(out, want) << "m " << m << " k " << k << " n " << n;
  }
}

// -128 and 127 everywhere (and mixed), over a k (140001: odd, not a multiple of 4) long enough for
// the int32 sums to wrap several times: the u8 offset of the VNNI versions and every version's
// int32 adds must still give sum w * x modulo 2^32. The requantisation is the identity on the
// low byte (M = 2^30, S = 30, unbounded lo/hi), so every accumulator bit reaches the output.
TEST_P(EmuKernelsTest, GemmExtremesOverALongKWrapLikeInt32) {
  const uint32_t m = 7, k = 140001, n = 17;
  const size_t col_stride = round_up(n, kGemmPanel);
  std::vector<int32_t> bias(m), multiplier(m, 1 << 30), shift(m, 30);
  for (int pattern = 0; pattern < 4; ++pattern) {
    std::vector<int8_t> weights(static_cast<size_t>(m) * k), col(round_up(k, 2) * col_stride, 0);
    for (size_t i = 0; i < weights.size(); ++i)
      weights[i] = (pattern == 0 || (pattern == 2 && i % 3 != 0)) ? -128 : 127;
    for (uint32_t r = 0; r < k; ++r) {
      for (uint32_t j = 0; j < n; ++j) col[r * col_stride + j] = (pattern == 3 && (r + j) % 2 == 0) ? 127 : -128;
    }
    for (uint32_t i = 0; i < m; ++i) bias[i] = random_int32();
    const std::vector<int32_t> packed = pack(weights, m, k);
    std::vector<int8_t> out(static_cast<size_t>(m) * n), want(out.size());
    for (uint32_t i = 0; i < m; ++i) {
      for (uint32_t j = 0; j < n; ++j) {
        uint32_t acc = 0;
        for (uint32_t p = 0; p < k; ++p) acc += static_cast<uint32_t>(weights[i * k + p] * col[p * col_stride + j]);
        want[i * n + j] = static_cast<int8_t>(abi::requantize(wrap_add(static_cast<int32_t>(acc), bias[i]),
                                                              multiplier[i], shift[i], INT32_MIN, INT32_MAX));
      }
    }
    const GemmArgs args{weights.data(),
                        packed.empty() ? nullptr : packed.data(),
                        m,
                        k,
                        col.data(),
                        col_stride,
                        n,
                        RequantParams{bias.data(), multiplier.data(), shift.data(), INT32_MIN, INT32_MAX},
                        out.data(),
                        n};
    kernels().gemm(args);
    ASSERT_EQ(out, want) << "pattern " << pattern;
  }
}

TEST_P(EmuKernelsTest, MacRowAndMacTapsWrapLikeInt32) {
  for (int round = 0; round < 60; ++round) {
    const uint32_t n = random_below(70), taps = 1 + random_below(kMaxTaps);
    std::vector<uint32_t> acc(n);
    for (uint32_t& a : acc) a = static_cast<uint32_t>(random_int32());
    std::vector<std::vector<int8_t>> rows(taps);
    std::vector<const int8_t*> src(taps);
    std::vector<int32_t> w(taps);
    for (uint32_t t = 0; t < taps; ++t) {
      rows[t] = random_bytes(n);
      src[t] = rows[t].data();
      w[t] = random_int8();
    }
    std::vector<uint32_t> want_row = acc, got_row = acc, want_taps = acc, got_taps = acc;
    for (uint32_t j = 0; j < n; ++j) {
      want_row[j] += static_cast<uint32_t>(w[0] * rows[0][j]);
      for (uint32_t t = 0; t < taps; ++t) want_taps[j] += static_cast<uint32_t>(w[t] * rows[t][j]);
    }
    kernels().mac_row(got_row.data(), rows[0].data(), w[0], n);
    kernels().mac_taps(got_taps.data(), src.data(), w.data(), taps, n);
    ASSERT_EQ(got_row, want_row) << "n " << n;
    ASSERT_EQ(got_taps, want_taps) << "n " << n << " taps " << taps;
  }
}

TEST_P(EmuKernelsTest, RequantizeRowMatchesAbiRequantize) {
  for (int round = 0; round < 200; ++round) {
    const uint32_t n = random_below(70);
    std::vector<int32_t> acc(n);
    for (int32_t& a : acc) {
      const uint32_t pick = random_below(8);
      a = pick == 0   ? std::numeric_limits<int32_t>::min()
          : pick == 1 ? std::numeric_limits<int32_t>::max()
                      : random_int32();
    }
    const int32_t bias = random_int32();
    int32_t multiplier, shift, lo, hi;
    random_scale(multiplier, shift);
    random_bounds(lo, hi);
    std::vector<int8_t> want(n), got(n);
    for (uint32_t j = 0; j < n; ++j) {
      want[j] = static_cast<int8_t>(abi::requantize(wrap_add(acc[j], bias), multiplier, shift, lo, hi));
    }
    kernels().requantize_row(acc.data(), n, bias, multiplier, shift, lo, hi, got.data());
    ASSERT_EQ(got, want) << "n " << n << " M " << multiplier << " S " << shift << " lo " << lo << " hi " << hi;
  }
}

TEST_P(EmuKernelsTest, MaxRowAndAddRowMatchTheAbi) {
  for (int round = 0; round < 100; ++round) {
    const uint32_t n = random_below(80);
    const std::vector<int8_t> a = random_bytes(n), b = random_bytes(n);
    std::vector<int8_t> max_got = a, max_want = a;
    for (uint32_t j = 0; j < n; ++j) max_want[j] = std::max(a[j], b[j]);
    kernels().max_row(max_got.data(), b.data(), n);
    ASSERT_EQ(max_got, max_want) << "n " << n;

    int32_t multiplier_a, multiplier_b, shift, lo, hi;
    random_scale(multiplier_a, shift);
    multiplier_b = 1 + static_cast<int32_t>(random_below(std::numeric_limits<int32_t>::max()));
    random_bounds(lo, hi);
    std::vector<int8_t> want(n), got(n);
    for (uint32_t j = 0; j < n; ++j) {
      want[j] = static_cast<int8_t>(abi::requantize_add(a[j], b[j], multiplier_a, multiplier_b, shift, lo, hi));
    }
    kernels().add_row(a.data(), b.data(), n, multiplier_a, multiplier_b, shift, lo, hi, got.data());
    ASSERT_EQ(got, want) << "n " << n << " S " << shift;
    // In place (y == a), as the kernel allows.
    std::vector<int8_t> in_place = a;
    kernels().add_row(in_place.data(), b.data(), n, multiplier_a, multiplier_b, shift, lo, hi, in_place.data());
    ASSERT_EQ(in_place, want) << "in place, n " << n;
  }
}

// Not a pass/fail criterion: prints each version's GEMM speed on a 3x3 conv's shape (32 channels
// in and out, 28 x 28 pixels) in process CPU time, which a busy machine (or qemu) disturbs less
// than wall time. The cross runs' logs then show NEON against scalar.
TEST_P(EmuKernelsTest, ReportsGemmSpeedOnAConvShape) {
  const uint32_t m = 32, k = 288, n = 784;
  const std::vector<int8_t> weights = random_bytes(static_cast<size_t>(m) * k), col = random_bytes(k * n);
  std::vector<int32_t> bias(m, 0), multiplier(m, 1 << 30), shift(m, 40);
  const std::vector<int32_t> packed = pack(weights, m, k);
  std::vector<int8_t> out(static_cast<size_t>(m) * n);
  const GemmArgs args{weights.data(),
                      packed.empty() ? nullptr : packed.data(),
                      m,
                      k,
                      col.data(),
                      n,
                      n,
                      RequantParams{bias.data(), multiplier.data(), shift.data(), -128, 127},
                      out.data(),
                      n};
  // Runs for at least 0.3 CPU seconds (clock()'s resolution makes shorter spans meaningless).
  const std::clock_t start = std::clock();
  uint32_t reps = 0;
  double seconds = 0;
  while (seconds < 0.3) {
    kernels().gemm(args);
    ++reps;
    seconds = static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
  }
  const double macs = static_cast<double>(m) * k * n * reps;
  std::printf("%s GEMM %ux%ux%u: %.3f CPU s for %u runs, %.1f M MAC per CPU second\n", kernels().name, m, k, n, seconds,
              reps, seconds > 0 ? macs / seconds / 1e6 : 0.0);
}

// The selection: scalar is always there and first; TESSERA_EMU_SCALAR aside, the default is the
// last (the SIMD version where there is one).
TEST(EmuKernelsSelection, ScalarFirstAndTheDefaultIsAvailable) {
  const std::vector<const EmuKernels*> all = available_kernels();
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all.front(), &scalar_kernels());
  bool default_listed = false;
  for (const EmuKernels* k : all) default_listed = default_listed || k == &emu_kernels();
  EXPECT_TRUE(default_listed);
#if defined(__aarch64__)
  // Advanced SIMD is part of ARMv8-A: an aarch64 build always offers NEON.
  ASSERT_NE(neon_kernels(), nullptr);
  EXPECT_STREQ(neon_kernels()->name, "NEON");
#endif
#if !defined(__aarch64__) && !defined(__arm__)
  EXPECT_EQ(neon_kernels(), nullptr);
#endif
}

// The dot product path exactly where the CPU reports it: under qemu-aarch64 both ways (its
// default CPU, "max", has it; QEMU_CPU=cortex-a53 has not: tests/unit/CMakeLists.txt runs this
// suite both ways), and on an aarch64 CPU with it, it is the default.
TEST(EmuKernelsSelection, NeonDotOnlyWhereTheCpuHasTheDotProduct) {
#if defined(__aarch64__)
  const bool has_dot = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
  std::printf("this CPU %s the Armv8.2 dot product (HWCAP_ASIMDDP)\n", has_dot ? "has" : "lacks");
  EXPECT_EQ(neon_dot_kernels() != nullptr, has_dot);
  if (has_dot) {
    EXPECT_STREQ(neon_dot_kernels()->id, "neon-dot");
    if (std::getenv("TESSERA_EMU_KERNELS") == nullptr && std::getenv("TESSERA_EMU_SCALAR") == nullptr) {
      EXPECT_EQ(&emu_kernels(), neon_dot_kernels());
    }
  }
  for (const KernelPath& path : kernel_paths()) {
    if (std::string(path.id) != "neon-dot") continue;
    EXPECT_EQ(path.kernels, neon_dot_kernels());
    EXPECT_EQ(path.missing, has_dot ? "" : "CPU lacks the Armv8.2 dot product (asimddp)");
  }
#else
  EXPECT_EQ(neon_dot_kernels(), nullptr);
#endif
}

// TESSERA_EMU_KERNELS forces each path this CPU has, refuses one it lacks saying why, and an
// unknown name listing the known ones; unset, the fastest available path runs.
TEST(EmuKernelsSelection, TheEnvironmentForcesAPathOrSaysWhyNot) {
  const char* saved = std::getenv("TESSERA_EMU_KERNELS");
  const std::string restore = saved != nullptr ? saved : "";
  ::unsetenv("TESSERA_EMU_KERNELS");
  const std::vector<KernelPath> paths = kernel_paths();
  Result<const EmuKernels*> fastest = select_kernels();
  ASSERT_TRUE(fastest.is_ok());
  for (const KernelPath& path : paths) {
    if (path.kernels != nullptr) {
      EXPECT_EQ(*fastest, path.kernels) << "the first available path is the default";
      break;
    }
  }
  for (const KernelPath& path : paths) {
    ::setenv("TESSERA_EMU_KERNELS", path.id, 1);
    Result<const EmuKernels*> chosen = select_kernels();
    if (path.kernels != nullptr) {
      ASSERT_TRUE(chosen.is_ok()) << path.id;
      EXPECT_EQ(*chosen, path.kernels);
      EXPECT_STREQ((*chosen)->id, path.id);
    } else {
      ASSERT_FALSE(chosen.is_ok()) << path.id;
      EXPECT_NE(chosen.status().message().find(path.missing), std::string::npos) << chosen.status().message();
    }
  }
  ::setenv("TESSERA_EMU_KERNELS", "avx3", 1);
  Result<const EmuKernels*> unknown = select_kernels();
  ASSERT_FALSE(unknown.is_ok());
  EXPECT_NE(unknown.status().message().find("avx512-vnni|avx-vnni|avx2|neon-dot|neon|scalar"), std::string::npos)
      << unknown.status().message();
  if (saved != nullptr) {
    ::setenv("TESSERA_EMU_KERNELS", restore.c_str(), 1);
  } else {
    ::unsetenv("TESSERA_EMU_KERNELS");
  }
}

// The name a path's tests carry: its id with '-' as '_' (avx512_vnni, avx_vnni, ...).
std::string path_test_name(const ::testing::TestParamInfo<KernelPath>& path) {
  std::string name = path.param.id;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

INSTANTIATE_TEST_SUITE_P(EveryVersion, EmuKernelsTest, ::testing::ValuesIn(kernel_paths()), path_test_name);

}  // namespace
}  // namespace tessera::emu
