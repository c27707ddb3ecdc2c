#include "accel/quant/quantize.h"

#include <algorithm>
#include <cmath>

#include "kernels/kernel_abi.h"

#if defined(__x86_64__)
#include "accel/common/x86_simd_support.h"
#define TESSERA_QUANT_AVX2 __attribute__((target("avx2")))
#define TESSERA_QUANT_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))
#endif

namespace tessera::quant {
namespace {

void quantize_scalar(const float* x, size_t n, float scale, int8_t* out) {
  for (size_t i = 0; i < n; ++i) out[i] = quantize_value(x[i], scale);
}

#if defined(__x86_64__)
// The vector versions divide (divps: the same correctly rounded quotient as the scalar x / scale),
// clamp to [-128, 127] and convert with cvtps2dq, which rounds under MXCSR's mode as nearbyint
// does under the same mode (both round-half-even by default). Clamping before rounding gives the
// same integer as rounding before clamping, because the bounds are integers and rounding is
// monotone. NaN lanes (unordered with themselves) become 0, as quantize_value's.

// Eight floats to eight int32 in [-128, 127] (NaN to 0).
TESSERA_QUANT_AVX2 inline __m256i quantize8(const float* p, __m256 s) {
  const __m256 q = _mm256_div_ps(_mm256_loadu_ps(p), s);
  const __m256i v =
      _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(q, _mm256_set1_ps(-128.0f)), _mm256_set1_ps(127.0f)));
  return _mm256_and_si256(v, _mm256_castps_si256(_mm256_cmp_ps(q, q, _CMP_ORD_Q)));
}

// 32 floats a step: four 8-lane conversions packed to bytes; the tail goes to the scalar.
TESSERA_QUANT_AVX2 void quantize_avx2(const float* x, size_t n, float scale, int8_t* out) {
  const __m256 s = _mm256_set1_ps(scale);
  // packs leave 128-bit lane order (0, 2, 1, 3) of 4-byte groups per source pair: this restores it.
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i ab = _mm256_packs_epi32(quantize8(x + i, s), quantize8(x + i + 8, s));
    const __m256i cd = _mm256_packs_epi32(quantize8(x + i + 16, s), quantize8(x + i + 24, s));
    const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(ab, cd), order);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), bytes);
  }
  quantize_scalar(x + i, n - i, scale, out + i);
}

// 16 floats a step, the last step masked.
TESSERA_QUANT_AVX512 void quantize_avx512(const float* x, size_t n, float scale, int8_t* out) {
  const __m512 s = _mm512_set1_ps(scale), lo = _mm512_set1_ps(-128.0f), hi = _mm512_set1_ps(127.0f);
  for (size_t i = 0; i < n; i += 16) {
    const size_t left = n - i < 16 ? n - i : 16;
    const auto mask = static_cast<__mmask16>(left == 16 ? 0xFFFFu : (1u << left) - 1);
    const __m512 q = _mm512_div_ps(_mm512_maskz_loadu_ps(mask, x + i), s);
    const __mmask16 ordered = _mm512_cmp_ps_mask(q, q, _CMP_ORD_Q);
    const __m512i v = _mm512_maskz_cvtps_epi32(ordered, _mm512_min_ps(_mm512_max_ps(q, lo), hi));
    _mm_mask_storeu_epi8(out + i, mask, _mm512_cvtepi32_epi8(v));
  }
}
#endif

}  // namespace

FixedMultiplier quantize_multiplier(double real) {
  if (!(real > 0)) return {0, abi::kMinShift};
  int exponent = 0;
  const double fraction = std::frexp(real, &exponent);  // real = fraction * 2^exponent, fraction in [0.5, 1)
  auto multiplier = static_cast<int64_t>(std::llround(fraction * (1ll << 31)));
  if (multiplier == (1ll << 31)) {
    multiplier /= 2;
    ++exponent;
  }
  int shift = 31 - exponent;
  if (shift < abi::kMinShift) {
    // real >= 2^30: saturating multiplier; such layers clamp anyway.
    return {INT32_MAX, abi::kMinShift};
  }
  if (shift > abi::kMaxShift) {
    // Shift the excess into the multiplier (losing precision) until it fits. An excess of 63 or
    // more leaves nothing (and a shift by >= 64 is undefined: x86 and ARM shift by excess mod 64,
    // which made 1e-30 a multiplier of 2^27; UBSan, issue 15).
    const int excess = shift - abi::kMaxShift;
    multiplier = excess >= 63 ? 0 : multiplier >> excess;
    shift = abi::kMaxShift;
  }
  return {static_cast<int32_t>(multiplier), shift};
}

float scale_for_range(float range) { return range > 0 ? range / 127.0f : 1.0f; }

int8_t quantize_value(float x, float scale) {
  const float q = std::nearbyint(x / scale);
  if (std::isnan(q)) return 0;
  return static_cast<int8_t>(std::clamp(q, -128.0f, 127.0f));
}

bool quantize_path_available(QuantizePath path) {
  switch (path) {
    case QuantizePath::kScalar: return true;
#if defined(__x86_64__)
    case QuantizePath::kAvx2: return __builtin_cpu_supports("avx2");
    case QuantizePath::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl");
#endif
    default: return false;
  }
}

void quantize_values_on(QuantizePath path, const float* x, size_t n, float scale, int8_t* out) {
  switch (path) {
#if defined(__x86_64__)
    case QuantizePath::kAvx2: quantize_avx2(x, n, scale, out); return;
    case QuantizePath::kAvx512: quantize_avx512(x, n, scale, out); return;
#endif
    default: quantize_scalar(x, n, scale, out); return;
  }
}

void quantize_values(const float* x, size_t n, float scale, int8_t* out) {
  static const QuantizePath best = quantize_path_available(QuantizePath::kAvx512) ? QuantizePath::kAvx512
                                   : quantize_path_available(QuantizePath::kAvx2) ? QuantizePath::kAvx2
                                                                                  : QuantizePath::kScalar;
  quantize_values_on(best, x, n, scale, out);
}

ChannelQuantized quantize_per_channel(const Tensor& weights) {
  ChannelQuantized out;
  const int64_t channels = weights.dim(0);
  const int64_t per_channel = weights.elements() / channels;
  out.values.resize(static_cast<size_t>(weights.elements()));
  out.scales.resize(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    const float* w = weights.ptr() + c * per_channel;
    float max_abs = 0;
    for (int64_t i = 0; i < per_channel; ++i) max_abs = std::max(max_abs, std::fabs(w[i]));
    const float scale = scale_for_range(max_abs);
    out.scales[static_cast<size_t>(c)] = scale;
    for (int64_t i = 0; i < per_channel; ++i) {
      const float q = std::clamp(std::nearbyint(w[i] / scale), -127.0f, 127.0f);
      out.values[static_cast<size_t>(c * per_channel + i)] = static_cast<int8_t>(q);
    }
  }
  return out;
}

}  // namespace tessera::quant
