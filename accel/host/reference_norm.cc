// Reference BatchNormalization (inference), LRN and Softmax.
#include <algorithm>
#include <cmath>

#include "accel/graph/op_shapes.h"
#include "accel/host/reference_ops.h"

namespace tessera::host {
namespace {

// Product of x's dims from `begin` on (1 for none).
int64_t trailing_elements(const Shape& s, size_t begin) {
  int64_t n = 1;
  for (size_t d = begin; d < s.size(); ++d) n *= s[d];
  return n;
}

// Caffe's WITHIN_CHANNEL LRN: y = x / (bias + alpha/size^2 * sum(x^2 over the size x size
// window centred on the pixel, zero outside the map))^beta.
Result<Tensor> lrn_within_channel(const Tensor& x, const LrnAttrs& attrs) {
  if (x.rank() != 4) return Status::invalid_argument("within-channel LRN needs a 4-D NCHW input");
  const int64_t planes = x.dim(0) * x.dim(1), h = x.dim(2), w = x.dim(3);
  const int64_t half = (attrs.size - 1) / 2;
  const float alpha_over_area = attrs.alpha / static_cast<float>(attrs.size * attrs.size);
  Tensor y(x.shape);
  for (int64_t p = 0; p < planes; ++p) {
    const float* xp = x.ptr() + p * h * w;
    float* yp = y.ptr() + p * h * w;
    for (int64_t r = 0; r < h; ++r) {
      for (int64_t col = 0; col < w; ++col) {
        float sum = 0.0f;
        for (int64_t i = std::max<int64_t>(0, r - half); i <= std::min(h - 1, r - half + attrs.size - 1); ++i) {
          for (int64_t j = std::max<int64_t>(0, col - half); j <= std::min(w - 1, col - half + attrs.size - 1); ++j) {
            sum += xp[i * w + j] * xp[i * w + j];
          }
        }
        yp[r * w + col] = xp[r * w + col] / std::pow(attrs.bias + alpha_over_area * sum, attrs.beta);
      }
    }
  }
  return y;
}

}  // namespace

Result<Tensor> batch_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& mean,
                          const Tensor& var, const BatchNormAttrs& attrs) {
  TESSERA_ASSIGN_OR_RETURN(Shape out_shape,
                           batch_norm_output_shape(x.shape, scale.shape, bias.shape, mean.shape, var.shape));
  const int64_t n = x.dim(0), c = x.dim(1), size = trailing_elements(x.shape, 2);
  Tensor y(out_shape);
  for (int64_t ch = 0; ch < c; ++ch) {
    const size_t i = static_cast<size_t>(ch);
    // y = x * a + b with a = scale / sqrt(var + eps), b = bias - mean * a.
    const float a = scale.data[i] / std::sqrt(var.data[i] + attrs.epsilon);
    const float b = bias.data[i] - mean.data[i] * a;
    for (int64_t img = 0; img < n; ++img) {
      const float* xp = x.ptr() + (img * c + ch) * size;
      float* yp = y.ptr() + (img * c + ch) * size;
      for (int64_t j = 0; j < size; ++j) yp[j] = xp[j] * a + b;
    }
  }
  return y;
}

Result<Tensor> lrn(const Tensor& x, const LrnAttrs& attrs) {
  TESSERA_ASSIGN_OR_RETURN(Shape out_shape, lrn_output_shape(x.shape, attrs));
  if (attrs.within_channel) return lrn_within_channel(x, attrs);
  const int64_t n = x.dim(0), c = x.dim(1), size = trailing_elements(x.shape, 2);
  // Channels c - before .. c + after (clipped) enter the square sum.
  const int64_t before = (attrs.size - 1) / 2, after = attrs.size / 2;
  const float alpha_over_size = attrs.alpha / static_cast<float>(attrs.size);
  Tensor y(out_shape);
  std::vector<float> square_sum(static_cast<size_t>(size));
  for (int64_t img = 0; img < n; ++img) {
    const float* xi = x.ptr() + img * c * size;
    float* yi = y.ptr() + img * c * size;
    for (int64_t ch = 0; ch < c; ++ch) {
      std::fill(square_sum.begin(), square_sum.end(), 0.0f);
      for (int64_t k = std::max<int64_t>(0, ch - before); k <= std::min(c - 1, ch + after); ++k) {
        const float* xk = xi + k * size;
        for (int64_t j = 0; j < size; ++j) square_sum[static_cast<size_t>(j)] += xk[j] * xk[j];
      }
      const float* xc = xi + ch * size;
      float* yc = yi + ch * size;
      for (int64_t j = 0; j < size; ++j) {
        const float base = attrs.bias + alpha_over_size * square_sum[static_cast<size_t>(j)];
        yc[j] = xc[j] / std::pow(base, attrs.beta);
      }
    }
  }
  return y;
}

Result<Tensor> softmax(const Tensor& x, int axis) {
  TESSERA_ASSIGN_OR_RETURN(Shape out_shape, softmax_output_shape(x.shape, axis));
  TESSERA_ASSIGN_OR_RETURN(const int ax, normalize_axis(axis, x.rank()));
  const int64_t len = x.dim(ax), inner = trailing_elements(x.shape, static_cast<size_t>(ax) + 1);
  const int64_t outer = len * inner == 0 ? 0 : x.elements() / (len * inner);
  Tensor y(out_shape);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t in = 0; in < inner; ++in) {
      const float* xp = x.ptr() + o * len * inner + in;
      float* yp = y.ptr() + o * len * inner + in;
      float max = -INFINITY;
      for (int64_t k = 0; k < len; ++k) max = std::max(max, xp[k * inner]);
      double sum = 0.0;
      for (int64_t k = 0; k < len; ++k) {
        const float e = std::exp(xp[k * inner] - max);
        yp[k * inner] = e;
        sum += e;
      }
      const float scale = static_cast<float>(1.0 / sum);
      for (int64_t k = 0; k < len; ++k) yp[k * inner] *= scale;
    }
  }
  return y;
}

}  // namespace tessera::host
