#include "server/metrics/exposition.h"

#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <cmath>
#include <cstddef>
#include <iterator>
#include <stdexcept>
#include <vector>

namespace tessera::metrics {
namespace {

// The byte length of the valid UTF-8 sequence starting at s[i] (RFC 3629: no overlongs, no
// surrogates, at most U+10FFFF), or 0 when it is not one.
size_t utf8_sequence_length(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF)
    n = 2;
  else if (c == 0xE0)
    n = 3, lo = 0xA0;
  else if (c == 0xED)
    n = 3, hi = 0x9F;
  else if (c >= 0xE1 && c <= 0xEF)
    n = 3;
  else if (c == 0xF0)
    n = 4, lo = 0x90;
  else if (c >= 0xF1 && c <= 0xF3)
    n = 4;
  else if (c == 0xF4)
    n = 4, hi = 0x8F;
  else
    return 0;
  if (i + n > s.size() || byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return n;
}

}  // namespace

std::string expose(const prometheus::Collectable& collectable) {
  return prometheus::TextSerializer().Serialize(collectable.Collect());
}

std::string expose(std::initializer_list<const prometheus::Collectable*> collectables) {
  std::vector<prometheus::MetricFamily> families;
  for (const prometheus::Collectable* c : collectables) {
    std::vector<prometheus::MetricFamily> more = c->Collect();
    families.insert(families.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  }
  return prometheus::TextSerializer().Serialize(families);
}

prometheus::Histogram::BucketBoundaries exponential_buckets(double start, double factor, int count) {
  if (!(start > 0) || !(factor > 1) || count < 1 || !std::isfinite(start * std::pow(factor, count))) {
    throw std::invalid_argument("metrics: exponential_buckets needs start > 0, factor > 1, count >= 1");
  }
  prometheus::Histogram::BucketBoundaries bounds;
  bounds.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) bounds.push_back(start * std::pow(factor, i));
  return bounds;
}

std::string label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (size_t i = 0; i < value.size();) {
    const size_t n = utf8_sequence_length(value, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(value, i, n);
      i += n;
    }
  }
  return out;
}

}  // namespace tessera::metrics
