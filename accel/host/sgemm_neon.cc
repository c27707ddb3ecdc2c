// NEON versions of the float GEMMs' innermost loops (reference_gemm.h), for the boards' ARM
// cores, where the host stage runs the fully-connected layers (NEURAghe ran them on the A9's
// NEON). Debian's armhf baseline (VFPv3-D16) has no NEON, so there the portable loops compile to
// scalar VFP code (what the TESSERA_NEON mark means and when these loops are offered:
// accel/common/arm_neon_support.h). On aarch64 the compiler already vectorises the portable
// loops; these keep the same shape there.
//
// Four accumulators of four lanes hide the multiply-add latency. The sums come out in another
// order than the portable loops' (and 32-bit NEON flushes denormals to zero), so results agree
// within float rounding, as tests/unit/accel/host/test_sgemm_kernels.cc checks.
#include "accel/host/reference_gemm.h"

#if defined(__aarch64__) || defined(__arm__)

#include "accel/common/arm_neon_support.h"

namespace tessera::host {
namespace {

// acc + a * b lane by lane (aarch64: fused; ARMv7 NEON has only the unfused vmla).
TESSERA_NEON inline float32x4_t multiply_add(float32x4_t acc, float32x4_t a, float32x4_t b) {
#if defined(__aarch64__)
  return vfmaq_f32(acc, a, b);
#else
  return vmlaq_f32(acc, a, b);
#endif
}

TESSERA_NEON inline float32x4_t multiply_add_n(float32x4_t acc, float32x4_t b, float a) {
  return multiply_add(acc, vdupq_n_f32(a), b);
}

TESSERA_NEON inline float horizontal_sum(float32x4_t v) {
  const float32x2_t pair = vadd_f32(vget_low_f32(v), vget_high_f32(v));
  return vget_lane_f32(vpadd_f32(pair, pair), 0);
}

TESSERA_NEON float dot_neon(const float* a, const float* b, int64_t k) {
  float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0, s2 = s0, s3 = s0;
  int64_t p = 0;
  for (; p + 16 <= k; p += 16) {
    s0 = multiply_add(s0, vld1q_f32(a + p), vld1q_f32(b + p));
    s1 = multiply_add(s1, vld1q_f32(a + p + 4), vld1q_f32(b + p + 4));
    s2 = multiply_add(s2, vld1q_f32(a + p + 8), vld1q_f32(b + p + 8));
    s3 = multiply_add(s3, vld1q_f32(a + p + 12), vld1q_f32(b + p + 12));
  }
  for (; p + 4 <= k; p += 4) s0 = multiply_add(s0, vld1q_f32(a + p), vld1q_f32(b + p));
  float tail = 0.0f;
  for (; p < k; ++p) tail += a[p] * b[p];
  return horizontal_sum(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3))) + tail;
}

TESSERA_NEON void axpy4_neon(int64_t n, float a0, float a1, float a2, float a3, const float* b0, const float* b1,
                             const float* b2, const float* b3, float* c) {
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    // The portable loop's order: c + (((a0 b0 + a1 b1) + a2 b2) + a3 b3).
    float32x4_t sum = vmulq_n_f32(vld1q_f32(b0 + j), a0);
    sum = multiply_add_n(sum, vld1q_f32(b1 + j), a1);
    sum = multiply_add_n(sum, vld1q_f32(b2 + j), a2);
    sum = multiply_add_n(sum, vld1q_f32(b3 + j), a3);
    vst1q_f32(c + j, vaddq_f32(vld1q_f32(c + j), sum));
  }
  for (; j < n; ++j) c[j] += a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j];
}

TESSERA_NEON void axpy1_neon(int64_t n, float a0, const float* b0, float* c) {
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) vst1q_f32(c + j, multiply_add_n(vld1q_f32(c + j), vld1q_f32(b0 + j), a0));
  for (; j < n; ++j) c[j] += a0 * b0[j];
}

}  // namespace

const SgemmKernels* neon_sgemm_kernels() {
  static const SgemmKernels kernels{"NEON", &dot_neon, &axpy4_neon, &axpy1_neon};
  static const bool available = cpu_has_neon();
  return available ? &kernels : nullptr;
}

}  // namespace tessera::host

#else  // not ARM

namespace tessera::host {
const SgemmKernels* neon_sgemm_kernels() { return nullptr; }
}  // namespace tessera::host

#endif
