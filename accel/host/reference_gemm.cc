// GEMM kernels and the Gemm / MatMul reference ops.
#include "accel/host/reference_gemm.h"

#include <algorithm>
#include <cstdlib>

#include "accel/graph/op_shapes.h"
#include "accel/host/host_threads.h"
#include "accel/host/reference_ops.h"

namespace tessera::host {
namespace {

// Block sizes: a kKBlock x kNBlock panel of B (128 KiB) stays in L2 while every row of A uses
// it; a kNBlock slice of a C row stays in L1.
constexpr int64_t kNBlock = 256;
constexpr int64_t kKBlock = 128;
// Above this many rows of A, Gemm transposes a transposed B once instead of dot products.
constexpr int64_t kDotRowsMax = 8;
// Multiply-adds of one GEMM above which its output columns (an FC layer's output features) are
// split across the host's threads: ~200 us on one core. A split starts a thread per call, tens of
// microseconds when a core is free and a scheduler slice more when none is (2 cores, a daemon's
// threads): the bundled model's FC layers split at 256K multiply-adds cost 70-90 us of latency per
// request through tesserad at concurrency 1.
constexpr int64_t kGemmSplitMacs = int64_t{1} << 22;
// Columns per part of a split: a whole number of SIMD vectors.
constexpr int64_t kSplitGrain = 16;

// c[0..n) += a0*b0 + a1*b1 + a2*b2 + a3*b3, elementwise along the rows.
void axpy4(int64_t n, float a0, float a1, float a2, float a3, const float* __restrict b0, const float* __restrict b1,
           const float* __restrict b2, const float* __restrict b3, float* __restrict c) {
  for (int64_t j = 0; j < n; ++j) c[j] += a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j];
}

void axpy1(int64_t n, float a0, const float* __restrict b0, float* __restrict c) {
  for (int64_t j = 0; j < n; ++j) c[j] += a0 * b0[j];
}

float dot(const float* __restrict a, const float* __restrict b, int64_t k) {
  float s[8] = {};
  int64_t p = 0;
  for (; p + 8 <= k; p += 8) {
    for (int l = 0; l < 8; ++l) s[l] += a[p + l] * b[p + l];
  }
  float tail = 0.0f;
  for (; p < k; ++p) tail += a[p] * b[p];
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])) + tail;
}

// The threads a GEMM of this size splits across (1 when small: see kGemmSplitMacs).
int split_threads(int64_t m, int64_t n, int64_t k) { return m * n * k >= kGemmSplitMacs ? host_thread_limit() : 1; }

}  // namespace

const SgemmKernels& portable_sgemm_kernels() {
  static const SgemmKernels kernels{"portable", &dot, &axpy4, &axpy1};
  return kernels;
}

const SgemmKernels& sgemm_kernels() {
  static const SgemmKernels* selected = [] {
    const SgemmKernels* simd = neon_sgemm_kernels() != nullptr ? neon_sgemm_kernels() : avx2_sgemm_kernels();
    if (simd != nullptr && std::getenv("TESSERA_HOST_PORTABLE") == nullptr) return simd;
    return &portable_sgemm_kernels();
  }();
  return *selected;
}

void sgemm_accumulate(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                      float* c, int64_t ldc, const SgemmKernels& kernels) {
  for (int64_t j0 = 0; j0 < n; j0 += kNBlock) {
    const int64_t nb = std::min(kNBlock, n - j0);
    for (int64_t p0 = 0; p0 < k; p0 += kKBlock) {
      const int64_t pe = std::min(k, p0 + kKBlock);
      for (int64_t i = 0; i < m; ++i) {
        const float* ai = a + i * lda;
        float* ci = c + i * ldc + j0;
        int64_t p = p0;
        for (; p + 4 <= pe; p += 4) {
          const float* bp = b + p * ldb + j0;
          kernels.axpy4(nb, ai[p], ai[p + 1], ai[p + 2], ai[p + 3], bp, bp + ldb, bp + 2 * ldb, bp + 3 * ldb, ci);
        }
        for (; p < pe; ++p) kernels.axpy1(nb, ai[p], b + p * ldb + j0, ci);
      }
    }
  }
}

void sgemm_bt_accumulate(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* bt, int64_t ldbt,
                         float* c, int64_t ldc, const SgemmKernels& kernels) {
  for (int64_t i0 = 0; i0 < m; i0 += kDotRowsMax) {
    const int64_t ie = std::min(m, i0 + kDotRowsMax);
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t i = i0; i < ie; ++i) c[i * ldc + j] += kernels.dot(a + i * lda, bt + j * ldbt, k);
    }
  }
}

void parallel_sgemm_accumulate(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                               int64_t ldb, float* c, int64_t ldc) {
  const HostThreads threads(split_threads(m, n, k));
  parallel_parts(threads, n, kSplitGrain, [&](int64_t begin, int64_t end) {
    sgemm_accumulate(m, end - begin, k, a, lda, b + begin, ldb, c + begin, ldc);
  });
}

std::vector<float> transpose_matrix(const float* src, int64_t rows, int64_t cols) {
  constexpr int64_t kTile = 32;
  std::vector<float> dst(static_cast<size_t>(rows * cols));
  for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      const int64_t re = std::min(rows, r0 + kTile), ce = std::min(cols, c0 + kTile);
      for (int64_t r = r0; r < re; ++r) {
        for (int64_t cc = c0; cc < ce; ++cc) dst[static_cast<size_t>(cc * rows + r)] = src[r * cols + cc];
      }
    }
  }
  return dst;
}

Result<Tensor> gemm(const Tensor& a, const Tensor& b, const Tensor* c, const GemmAttrs& attrs) {
  TESSERA_ASSIGN_OR_RETURN(Shape out_shape, gemm_output_shape(a.shape, b.shape, c ? &c->shape : nullptr, attrs));
  const int64_t m = out_shape[0], n = out_shape[1];
  const int64_t k = attrs.trans_a ? a.dim(0) : a.dim(1);
  std::vector<float> a_t;
  const float* ap = a.ptr();
  if (attrs.trans_a) {
    a_t = transpose_matrix(a.ptr(), k, m);
    ap = a_t.data();
  }
  std::vector<float> acc(static_cast<size_t>(m * n), 0.0f);
  if (attrs.trans_b && m <= kDotRowsMax) {
    const HostThreads threads(split_threads(m, n, k));
    parallel_parts(threads, n, kSplitGrain, [&](int64_t begin, int64_t end) {
      sgemm_bt_accumulate(m, end - begin, k, ap, k, b.ptr() + begin * k, k, acc.data() + begin, n);
    });
  } else if (attrs.trans_b) {
    const std::vector<float> b_t = transpose_matrix(b.ptr(), n, k);
    parallel_sgemm_accumulate(m, n, k, ap, k, b_t.data(), n, acc.data(), n);
  } else {
    parallel_sgemm_accumulate(m, n, k, ap, k, b.ptr(), n, acc.data(), n);
  }
  Tensor y(out_shape);
  // Strides of C over the output's rows and columns (0 where C broadcasts).
  int64_t c_row = 0, c_col = 0;
  const bool use_c = c != nullptr && attrs.beta != 0.0f;
  if (use_c && c->rank() == 2) {
    c_row = c->dim(0) == 1 ? 0 : c->dim(1);
    c_col = c->dim(1) == 1 ? 0 : 1;
  } else if (use_c && c->rank() == 1) {
    c_col = c->dim(0) == 1 ? 0 : 1;
  }
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float v = attrs.alpha * acc[static_cast<size_t>(i * n + j)];
      if (use_c) v += attrs.beta * c->data[static_cast<size_t>(i * c_row + j * c_col)];
      y.data[static_cast<size_t>(i * n + j)] = v;
    }
  }
  return y;
}

Result<Tensor> matmul(const Tensor& a, const Tensor& b) {
  TESSERA_ASSIGN_OR_RETURN(Shape out_shape, matmul_output_shape(a.shape, b.shape));
  const Shape a2 = a.rank() == 1 ? Shape{1, a.dim(0)} : a.shape;
  const Shape b2 = b.rank() == 1 ? Shape{b.dim(0), 1} : b.shape;
  const int64_t m = a2[a2.size() - 2], k = a2.back(), n = b2.back();
  const Shape a_batch(a2.begin(), a2.end() - 2), b_batch(b2.begin(), b2.end() - 2);
  TESSERA_ASSIGN_OR_RETURN(const Shape batch, broadcast_shape(a_batch, b_batch));
  // Per batch dim, how far a step moves in A's and B's matrices (0 where they broadcast).
  const size_t r = batch.size();
  std::vector<int64_t> a_step(r, 0), b_step(r, 0);
  int64_t a_stride = 1, b_stride = 1;
  for (size_t d = r; d-- > 0;) {
    const size_t off_a = r - a_batch.size(), off_b = r - b_batch.size();
    if (d >= off_a) {
      if (a_batch[d - off_a] != 1) a_step[d] = a_stride;
      a_stride *= a_batch[d - off_a];
    }
    if (d >= off_b) {
      if (b_batch[d - off_b] != 1) b_step[d] = b_stride;
      b_stride *= b_batch[d - off_b];
    }
  }
  Tensor y(out_shape);
  const int64_t count = shape_elements(batch);
  std::vector<int64_t> index(r, 0);
  for (int64_t bi = 0; bi < count; ++bi) {
    int64_t ai = 0, bj = 0;
    for (size_t d = 0; d < r; ++d) {
      ai += index[d] * a_step[d];
      bj += index[d] * b_step[d];
    }
    parallel_sgemm_accumulate(m, n, k, a.ptr() + ai * m * k, k, b.ptr() + bj * k * n, n, y.ptr() + bi * m * n, n);
    for (size_t d = r; d-- > 0;) {
      if (++index[d] < batch[d]) break;
      index[d] = 0;
    }
  }
  return y;
}

}  // namespace tessera::host
