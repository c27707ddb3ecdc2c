#include "server/batching/classify_result.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace tessera {
namespace {

// NaN sorts last, so the comparison stays a strict weak order.
float sort_key(float score) { return std::isnan(score) ? -std::numeric_limits<float>::infinity() : score; }

}  // namespace

int effective_top_k(uint64_t requested, int num_classes) {
  const uint64_t k = requested == 0 ? kDefaultTopK : requested;
  return static_cast<int>(std::min<uint64_t>(k, static_cast<uint64_t>(std::max(num_classes, 0))));
}

std::vector<ScoredClass> top_k_classes(std::span<const float> scores, int k, const std::vector<std::string>& labels) {
  std::vector<int> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  const size_t n = std::min(order.size(), static_cast<size_t>(std::max(k, 0)));
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(), [&](int a, int b) {
    const float sa = sort_key(scores[static_cast<size_t>(a)]);
    const float sb = sort_key(scores[static_cast<size_t>(b)]);
    return sa != sb ? sa > sb : a < b;
  });
  std::vector<ScoredClass> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const int index = order[i];
    const auto u = static_cast<size_t>(index);
    out.push_back({index, u < labels.size() ? labels[u] : "class " + std::to_string(index), scores[u]});
  }
  return out;
}

uint64_t micros_between(std::chrono::steady_clock::time_point from, std::chrono::steady_clock::time_point to) {
  if (to <= from) return 0;
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(to - from).count());
}

}  // namespace tessera
