// The Prometheus text exposition of a prometheus-cpp registry, and the small helpers the
// daemon's metrics need around prometheus-cpp (Debian 12's prometheus-cpp-dev; only its core
// library is linked: /metrics is served by the daemon's own HTTP server, not by prometheus-cpp's
// civetweb Exposer).
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/histogram.h>

#include <initializer_list>
#include <string>
#include <string_view>

namespace tessera::metrics {

// The Content-Type of expose()'s output (text exposition format 0.0.4).
inline constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

// The text exposition of everything `collectable` (usually a prometheus::Registry) holds, written
// by prometheus-cpp's TextSerializer. Families without any series are left out. The serializer
// escapes label values but not HELP texts: a HELP text must not hold a backslash or a newline.
std::string expose(const prometheus::Collectable& collectable);
// The same of several collectables, one after the other (their family names must differ).
std::string expose(std::initializer_list<const prometheus::Collectable*> collectables);

// `count` bucket bounds start, start*factor, start*factor^2, ... (start > 0, factor > 1,
// count >= 1; throws std::invalid_argument otherwise). prometheus-cpp 1.0 has no such helper.
prometheus::Histogram::BucketBoundaries exponential_buckets(double start, double factor, int count);

// `value` as a label value Prometheus accepts: each byte that is not part of valid UTF-8 becomes
// U+FFFD. Prometheus rejects a whole scrape over one non-UTF-8 label value, prometheus-cpp passes
// values through unchecked, and model names come from the file system.
std::string label_value(std::string_view value);

}  // namespace tessera::metrics
