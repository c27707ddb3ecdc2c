// Internal float GEMM kernels shared by the reference conv2d, gemm and matmul. Row-major
// matrices with leading dimensions; each accumulates into C (C += A * B).
#pragma once

#include <cstdint>
#include <vector>

namespace tessera::host {

// C[m,n] += sum_k A[m,k] * B[k,n]. Blocked i-k-j loops whose innermost loop runs along a row of
// B and C, so it vectorises.
void sgemm_accumulate(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                      float* c, int64_t ldc);

// C[m,n] += sum_k A[m,k] * Bt[n,k], for a B stored transposed (rows of Bt contiguous): dot
// products, good when m is small (a few images through a fully-connected layer).
void sgemm_bt_accumulate(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* bt, int64_t ldbt,
                         float* c, int64_t ldc);

// The transpose of a rows x cols row-major matrix (cols x rows).
std::vector<float> transpose_matrix(const float* src, int64_t rows, int64_t cols);

}  // namespace tessera::host
