// Internal float GEMM kernels shared by the reference conv2d, gemm and matmul (the host stage's
// fully-connected layers run here). Row-major matrices with leading dimensions; each accumulates
// into C (C += A * B).
#pragma once

#include <cstdint>
#include <vector>

namespace tessera::host {

// The GEMMs' innermost loops, in versions: portable C++ (what the compiler makes of it: SSE on
// x86, NEON on aarch64, VFP scalar on armhf), NEON intrinsics (sgemm_neon.cc; aarch64, and
// 32-bit ARM when the CPU has NEON: the Zynq-7000's Cortex-A9, where NEURAghe ran its FC layers)
// and AVX2 + FMA intrinsics (sgemm_avx2.cc, x86-64 CPUs that have them).
// Versions differ only in the order of float additions (NEON on 32-bit ARM also flushes
// denormals to zero): results agree within float rounding, not bit for bit.
struct SgemmKernels {
  const char* name;  // "portable" | "NEON" | "AVX2"
  // sum over p < k of a[p] * b[p].
  float (*dot)(const float* a, const float* b, int64_t k);
  // c[j] += a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j] for j < n.
  void (*axpy4)(int64_t n, float a0, float a1, float a2, float a3, const float* b0, const float* b1, const float* b2,
                const float* b3, float* c);
  // c[j] += a0 * b0[j] for j < n.
  void (*axpy1)(int64_t n, float a0, const float* b0, float* c);
};

const SgemmKernels& portable_sgemm_kernels();
// Null where the NEON version is not compiled in (non-ARM) or the CPU lacks NEON.
const SgemmKernels* neon_sgemm_kernels();
// AVX2 + FMA (sgemm_avx2.cc); null where not compiled in (non-x86-64) or the CPU lacks either.
const SgemmKernels* avx2_sgemm_kernels();
// NEON or AVX2 where there is one (unless TESSERA_HOST_PORTABLE is set in the environment), else
// portable.
const SgemmKernels& sgemm_kernels();

// C[m,n] += sum_k A[m,k] * B[k,n]. Blocked i-k-j loops whose innermost loop runs along a row of
// B and C, so it vectorises.
void sgemm_accumulate(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                      float* c, int64_t ldc, const SgemmKernels& kernels = sgemm_kernels());

// sgemm_accumulate with C's columns split across the threads the host's budget gives
// (host_threads.h) when the GEMM is big enough to pay for it. Each column's sum is computed as
// unsplit, so the result does not depend on the split.
void parallel_sgemm_accumulate(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                               int64_t ldb, float* c, int64_t ldc);

// C[m,n] += sum_k A[m,k] * Bt[n,k], for a B stored transposed (rows of Bt contiguous): dot
// products, good when m is small (a few images through a fully-connected layer).
void sgemm_bt_accumulate(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* bt, int64_t ldbt,
                         float* c, int64_t ldc, const SgemmKernels& kernels = sgemm_kernels());

// The transpose of a rows x cols row-major matrix (cols x rows).
std::vector<float> transpose_matrix(const float* src, int64_t rows, int64_t cols);

}  // namespace tessera::host
