// AVX2 + FMA versions of the float GEMMs' innermost loops (reference_gemm.h), for x86 hosts
// (AWS F1's, and this machine's emulator), where the host stage runs the fully-connected layers
// and the fp32 path runs FC, MatMul (and the conv without oneDNN). The portable loops compile to
// SSE2 for the x86-64 baseline: AlexNet's FC layers at batch 8 took ~200 ms a batch there. The
// code is confined to functions with a target attribute (not file-wide flags), so no AVX2 copy
// of a shared inline function reaches a CPU without it; chosen at run time when the CPU has both.
//
// Four accumulators of eight lanes hide the FMA latency. The sums come out in another order than
// the portable loops', so results agree within float rounding, as
// tests/unit/accel/host/test_sgemm_kernels.cc checks.
#include "accel/host/reference_gemm.h"

#if defined(__x86_64__)

#include <immintrin.h>

#define TESSERA_AVX2 __attribute__((target("avx2,fma")))

namespace tessera::host {
namespace {

TESSERA_AVX2 float horizontal_sum(__m256 v) {
  const __m128 half = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 pair = _mm_add_ps(half, _mm_movehl_ps(half, half));
  return _mm_cvtss_f32(_mm_add_ss(pair, _mm_shuffle_ps(pair, pair, 1)));
}

TESSERA_AVX2 float dot_avx2(const float* a, const float* b, int64_t k) {
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  int64_t p = 0;
  for (; p + 32 <= k; p += 32) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + p), _mm256_loadu_ps(b + p), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + p + 8), _mm256_loadu_ps(b + p + 8), s1);
    s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + p + 16), _mm256_loadu_ps(b + p + 16), s2);
    s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + p + 24), _mm256_loadu_ps(b + p + 24), s3);
  }
  for (; p + 8 <= k; p += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + p), _mm256_loadu_ps(b + p), s0);
  float tail = 0.0f;
  for (; p < k; ++p) tail += a[p] * b[p];
  return horizontal_sum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3))) + tail;
}

TESSERA_AVX2 void axpy4_avx2(int64_t n, float a0, float a1, float a2, float a3, const float* b0, const float* b1,
                             const float* b2, const float* b3, float* c) {
  const __m256 v0 = _mm256_set1_ps(a0), v1 = _mm256_set1_ps(a1), v2 = _mm256_set1_ps(a2), v3 = _mm256_set1_ps(a3);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256 acc = _mm256_loadu_ps(c + j);
    acc = _mm256_fmadd_ps(v0, _mm256_loadu_ps(b0 + j), acc);
    acc = _mm256_fmadd_ps(v1, _mm256_loadu_ps(b1 + j), acc);
    acc = _mm256_fmadd_ps(v2, _mm256_loadu_ps(b2 + j), acc);
    acc = _mm256_fmadd_ps(v3, _mm256_loadu_ps(b3 + j), acc);
    _mm256_storeu_ps(c + j, acc);
  }
  for (; j < n; ++j) c[j] += a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j];
}

TESSERA_AVX2 void axpy1_avx2(int64_t n, float a0, const float* b0, float* c) {
  const __m256 v0 = _mm256_set1_ps(a0);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    _mm256_storeu_ps(c + j, _mm256_fmadd_ps(v0, _mm256_loadu_ps(b0 + j), _mm256_loadu_ps(c + j)));
  }
  for (; j < n; ++j) c[j] += a0 * b0[j];
}

}  // namespace

const SgemmKernels* avx2_sgemm_kernels() {
  static const SgemmKernels kernels{"AVX2", &dot_avx2, &axpy4_avx2, &axpy1_avx2};
  static const bool available = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return available ? &kernels : nullptr;
}

}  // namespace tessera::host

#else  // not x86-64

namespace tessera::host {
const SgemmKernels* avx2_sgemm_kernels() { return nullptr; }
}  // namespace tessera::host

#endif
