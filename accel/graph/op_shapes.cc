#include "accel/graph/op_shapes.h"
#include "accel/graph/shape_messages.h"

#include <algorithm>
#include <string>

namespace tessera {
namespace {

using shape_messages::invalid;
using shape_messages::rank_of;
using shape_messages::str;

int64_t product(const Shape& s, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= s[i];
  return n;
}

Status check_per_channel(const char* what, const Shape& param, int64_t channels) {
  if (param.size() != 1 || param[0] != channels) {
    return invalid(std::string(what) + " must be [" + std::to_string(channels) + "], got " + str(param));
  }
  return Status::ok();
}

}  // namespace

Result<int> normalize_axis(int axis, int rank, bool allow_rank) {
  const int hi = allow_rank ? rank : rank - 1;
  if (axis < -rank || axis > hi) {
    return invalid("axis " + std::to_string(axis) + " is out of range [" + std::to_string(-rank) + ", " +
                   std::to_string(hi) + "] for rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

Result<Shape> conv_output_shape(const Shape& x, const Shape& w, const Shape* bias, const ConvAttrs& attrs) {
  if (x.size() != 4) return invalid("input must be 4-D NCHW, got " + str(x));
  if (w.size() != 4) return invalid("weights must be 4-D [M, C/group, kH, kW], got " + str(w));
  const int group = attrs.group;
  if (group < 1) return invalid("group must be >= 1, got " + std::to_string(group));
  const int64_t c = x[1], m = w[0];
  if (c % group != 0) {
    return invalid("group " + std::to_string(group) + " does not divide the " + std::to_string(c) + " input channels");
  }
  if (m % group != 0) {
    return invalid("group " + std::to_string(group) + " does not divide the " + std::to_string(m) +
                   " output channels of weights " + str(w));
  }
  if (w[1] * group != c) {
    return invalid("input has " + std::to_string(c) + " channels but weights " + str(w) + " with group " +
                   std::to_string(group) + " expect " + std::to_string(w[1] * group));
  }
  if (w[2] != attrs.kernel[0] || w[3] != attrs.kernel[1]) {
    return invalid("kernel_shape [" + std::to_string(attrs.kernel[0]) + "," + std::to_string(attrs.kernel[1]) +
                   "] does not match weights " + str(w));
  }
  if (bias != nullptr) TESSERA_RETURN_IF_ERROR(check_per_channel("bias", *bias, m));
  Shape out{x[0], m, 0, 0};
  for (int i = 0; i < 2; ++i) {
    const int k = attrs.kernel[i], s = attrs.stride[i], d = attrs.dilation[i];
    const int pb = attrs.pads[i], pe = attrs.pads[i + 2];
    if (k < 1 || s < 1 || d < 1 || pb < 0 || pe < 0) {
      return invalid("kernel, stride and dilation must be >= 1 and pads >= 0");
    }
    const int64_t span = static_cast<int64_t>(d) * (k - 1) + 1;
    const int64_t padded = x[2 + i] + pb + pe;
    if (padded < span) {
      return invalid("padded input " + str(x) + " is smaller than the dilated kernel (" + std::to_string(span) +
                     ") in dim " + std::to_string(2 + i));
    }
    out[2 + i] = (padded - span) / s + 1;
  }
  return out;
}

Result<int64_t> pool_output_dim(int64_t in, int kernel, int stride, int pad_begin, int pad_end, bool ceil_mode) {
  if (kernel < 1 || stride < 1 || pad_begin < 0 || pad_end < 0) {
    return invalid("kernel and stride must be >= 1 and pads >= 0");
  }
  if (pad_begin >= kernel || pad_end >= kernel) {
    return invalid("pads (" + std::to_string(pad_begin) + "," + std::to_string(pad_end) +
                   ") must be smaller than the kernel (" + std::to_string(kernel) + ")");
  }
  const int64_t span = in + pad_begin + pad_end - kernel;
  if (span < 0) {
    return invalid("padded input size " + std::to_string(in + pad_begin + pad_end) + " is smaller than the kernel " +
                   std::to_string(kernel));
  }
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  // The last window must start inside the input or the leading pad.
  if (ceil_mode && (out - 1) * stride >= in + pad_begin) --out;
  return out;
}

Result<Shape> pool_output_shape(const Shape& x, const PoolAttrs& attrs) {
  if (x.size() != 4) return invalid("input must be 4-D NCHW, got " + str(x));
  Shape out{x[0], x[1], 0, 0};
  for (int i = 0; i < 2; ++i) {
    auto dim =
        pool_output_dim(x[2 + i], attrs.kernel[i], attrs.stride[i], attrs.pads[i], attrs.pads[i + 2], attrs.ceil_mode);
    if (!dim) return invalid(dim.status().message() + " (input " + str(x) + ")");
    out[2 + i] = *dim;
  }
  return out;
}

Result<Shape> global_pool_output_shape(const Shape& x) {
  if (x.size() < 3) return invalid("input must be [N, C, D1, ...], got " + str(x));
  Shape out = x;
  std::fill(out.begin() + 2, out.end(), 1);
  return out;
}

Result<Shape> gemm_output_shape(const Shape& a, const Shape& b, const Shape* c, const GemmAttrs& attrs) {
  if (a.size() != 2 || b.size() != 2) {
    return invalid("A and B must be 2-D, got " + str(a) + " and " + str(b));
  }
  const int64_t m = attrs.trans_a ? a[1] : a[0];
  const int64_t k = attrs.trans_a ? a[0] : a[1];
  const int64_t kb = attrs.trans_b ? b[1] : b[0];
  const int64_t n = attrs.trans_b ? b[0] : b[1];
  if (k != kb) {
    return invalid("inner dims differ: A " + str(a) + (attrs.trans_a ? " (transposed)" : "") + " and B " + str(b) +
                   (attrs.trans_b ? " (transposed)" : ""));
  }
  Shape out{m, n};
  if (c != nullptr) {
    auto bc = broadcast_shape(*c, out);
    if (c->size() > 2 || !bc || *bc != out) {
      return invalid("C " + str(*c) + " does not broadcast to the output " + str(out));
    }
  }
  return out;
}

Result<Shape> matmul_output_shape(const Shape& a, const Shape& b) {
  if (a.empty() || b.empty()) {
    return invalid("operands must have rank >= 1, got " + str(a) + " and " + str(b));
  }
  const Shape a2 = a.size() == 1 ? Shape{1, a[0]} : a;
  const Shape b2 = b.size() == 1 ? Shape{b[0], 1} : b;
  if (a2.back() != b2[b2.size() - 2]) {
    return invalid("inner dims differ: " + str(a) + " x " + str(b));
  }
  auto batch = broadcast_shape(Shape(a2.begin(), a2.end() - 2), Shape(b2.begin(), b2.end() - 2));
  if (!batch) return invalid("batch dims do not broadcast: " + str(a) + " x " + str(b));
  Shape out = *batch;
  if (a.size() > 1) out.push_back(a2[a2.size() - 2]);
  if (b.size() > 1) out.push_back(b2.back());
  return out;
}

Result<Shape> broadcast_shape(const Shape& a, const Shape& b) {
  const size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1) {
      return invalid("shapes " + str(a) + " and " + str(b) + " do not broadcast");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Result<Shape> concat_output_shape(const std::vector<Shape>& inputs, int axis, bool broadcast_batch) {
  if (inputs.empty()) return invalid("needs at least one input");
  const Shape& first = inputs[0];
  TESSERA_ASSIGN_OR_RETURN(const int ax, normalize_axis(axis, rank_of(first)));
  Shape out = first;
  out[ax] = 0;
  const bool repeat = broadcast_batch && ax != 0;
  for (const Shape& s : inputs) {
    if (repeat && !s.empty() && !out.empty()) out[0] = std::max(out[0], s[0]);
  }
  for (const Shape& s : inputs) {
    bool fits = s.size() == first.size();
    for (size_t i = 0; fits && i < s.size(); ++i) {
      fits = static_cast<int>(i) == ax || s[i] == first[i] || (repeat && i == 0 && (s[0] == 1 || s[0] == out[0]));
    }
    if (!fits) {
      return invalid("inputs " + str(first) + " and " + str(s) + " differ outside axis " + std::to_string(ax));
    }
    out[ax] += s[ax];
  }
  return out;
}

Result<Shape> flatten_output_shape(const Shape& x, int axis) {
  TESSERA_ASSIGN_OR_RETURN(const int ax, normalize_axis(axis, rank_of(x), true));
  return Shape{product(x, 0, ax), product(x, ax, x.size())};
}

Result<Shape> reshape_output_shape(const Shape& x, const ReshapeAttrs& attrs) {
  Shape out = attrs.shape;
  int infer_at = -1;
  bool has_zero = false;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      if (infer_at >= 0) return invalid("target " + str(attrs.shape) + " has more than one -1");
      infer_at = static_cast<int>(i);
    } else if (out[i] < -1) {
      return invalid("target " + str(attrs.shape) + " has a negative dim other than -1");
    } else if (out[i] == 0) {
      has_zero = true;
      if (!attrs.allow_zero) {
        if (i >= x.size()) {
          return invalid("target " + str(attrs.shape) + " copies dim " + std::to_string(i) + " (0) but the input " +
                         str(x) + " has rank " + std::to_string(x.size()));
        }
        out[i] = x[i];
      }
    }
  }
  if (attrs.allow_zero && has_zero && infer_at >= 0) {
    return invalid("target " + str(attrs.shape) + " has both 0 and -1 with allow_zero");
  }
  const int64_t total = shape_elements(x);
  if (infer_at >= 0) {
    out[infer_at] = 1;
    const int64_t known = shape_elements(out);
    if (known == 0 || total % known != 0) {
      return invalid("cannot reshape " + str(x) + " (" + std::to_string(total) + " elements) to " + str(attrs.shape));
    }
    out[infer_at] = total / known;
  }
  if (shape_elements(out) != total) {
    return invalid("cannot reshape " + str(x) + " (" + std::to_string(total) + " elements) to " + str(attrs.shape) +
                   " (" + std::to_string(shape_elements(out)) + " elements)");
  }
  return out;
}

Result<Shape> batch_norm_output_shape(const Shape& x, const Shape& scale, const Shape& bias, const Shape& mean,
                                      const Shape& var) {
  if (x.size() < 2) return invalid("input must be [N, C, ...], got " + str(x));
  TESSERA_RETURN_IF_ERROR(check_per_channel("scale", scale, x[1]));
  TESSERA_RETURN_IF_ERROR(check_per_channel("bias", bias, x[1]));
  TESSERA_RETURN_IF_ERROR(check_per_channel("mean", mean, x[1]));
  TESSERA_RETURN_IF_ERROR(check_per_channel("var", var, x[1]));
  return x;
}

Result<Shape> lrn_output_shape(const Shape& x, const LrnAttrs& attrs) {
  if (x.size() < 2) return invalid("input must be [N, C, ...], got " + str(x));
  if (attrs.size < 1) return invalid("size must be >= 1, got " + std::to_string(attrs.size));
  return x;
}

Result<Shape> softmax_output_shape(const Shape& x, int axis) {
  if (x.empty()) return invalid("input must have rank >= 1");
  TESSERA_RETURN_IF_ERROR(normalize_axis(axis, rank_of(x)).status());
  return x;
}

}  // namespace tessera
