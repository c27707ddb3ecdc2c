// The helpers around prometheus-cpp: expose() writes the text format the daemon serves (what
// prometheus-cpp's TextSerializer does with labels, escaping, special floats and empty families is
// pinned here, so a change of the library shows up as a failing test, not a broken scrape),
// exponential_buckets() and label_value().
#include <gtest/gtest.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "server/metrics/exposition.h"

namespace tessera::metrics {
namespace {

TEST(MetricsExposition, CounterLabelsSortedByNameAndValuesEscaped) {
  prometheus::Registry registry;
  auto& requests = prometheus::BuildCounter().Name("requests_total").Help("Requests answered.").Register(registry);
  requests.Add({{"model", "a\"b\\c\nd"}, {"code", "OK"}}).Increment(3);
  EXPECT_EQ(&requests.Add({{"code", "OK"}, {"model", "a\"b\\c\nd"}}),
            &requests.Add({{"model", "a\"b\\c\nd"}, {"code", "OK"}}))
      << "the same labels in any order are the same series";
  EXPECT_EQ(expose(registry),
            "# HELP requests_total Requests answered.\n"
            "# TYPE requests_total counter\n"
            "requests_total{code=\"OK\",model=\"a\\\"b\\\\c\\nd\"} 3\n");
}

TEST(MetricsExposition, FamiliesWithoutSeriesAreLeftOut) {
  prometheus::Registry registry;
  prometheus::BuildGauge().Name("labelled").Help("No series yet.").Register(registry);
  prometheus::BuildGauge().Name("unlabelled").Help("One series.").Register(registry).Add({});
  EXPECT_EQ(expose(registry), "# HELP unlabelled One series.\n# TYPE unlabelled gauge\nunlabelled 0\n");
}

TEST(MetricsExposition, SpecialAndFractionalValues) {
  prometheus::Registry registry;
  auto& g = prometheus::BuildGauge().Name("g").Help("G.").Register(registry);
  g.Add({{"v", "nan"}}).Set(std::nan(""));
  g.Add({{"v", "inf"}}).Set(std::numeric_limits<double>::infinity());
  g.Add({{"v", "small"}}).Set(5e-5);
  g.Add({{"v", "big"}}).Set(1234567.5);
  const std::string text = expose(registry);
  // "Nan" is prometheus-cpp's spelling; Prometheus reads floats case-insensitively (promtool and
  // the real scrape tests take it).
  EXPECT_NE(text.find("g{v=\"nan\"} Nan\n"), std::string::npos) << text;
  EXPECT_NE(text.find("g{v=\"inf\"} +Inf\n"), std::string::npos) << text;
  EXPECT_NE(text.find("g{v=\"small\"} 5e-05\n"), std::string::npos) << text;
  EXPECT_NE(text.find("g{v=\"big\"} 1234567.5\n"), std::string::npos) << text;
}

TEST(MetricsExposition, HistogramBucketsAreCumulativeWithInfSumAndCount) {
  prometheus::Registry registry;
  auto& h = prometheus::BuildHistogram()
                .Name("latency_seconds")
                .Help("Latency.")
                .Register(registry)
                .Add({{"model", "m"}}, prometheus::Histogram::BucketBoundaries{0.001, 0.01, 0.1});
  for (double v : {0.0005, 0.001, 0.02, 3.0}) h.Observe(v);
  const std::string text = expose(registry);
  for (const char* line :
       {"latency_seconds_bucket{model=\"m\",le=\"0.001\"} 2\n", "latency_seconds_bucket{model=\"m\",le=\"0.01\"} 2\n",
        "latency_seconds_bucket{model=\"m\",le=\"0.1\"} 3\n", "latency_seconds_bucket{model=\"m\",le=\"+Inf\"} 4\n",
        "latency_seconds_count{model=\"m\"} 4\n", "latency_seconds_sum{model=\"m\"} 3.0215\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "in\n" << text;
  }
}

TEST(MetricsExposition, ExponentialBuckets) {
  EXPECT_EQ(exponential_buckets(0.001, 10, 3), (prometheus::Histogram::BucketBoundaries{0.001, 0.01, 0.1}));
  const auto latency = exponential_buckets(50e-6, 2, 21);
  ASSERT_EQ(latency.size(), 21u);
  EXPECT_DOUBLE_EQ(latency.back(), 50e-6 * 1048576);
  EXPECT_THROW(exponential_buckets(0, 2, 3), std::invalid_argument);
  EXPECT_THROW(exponential_buckets(1, 1, 3), std::invalid_argument);
  EXPECT_THROW(exponential_buckets(1, 2, 0), std::invalid_argument);
  EXPECT_THROW(exponential_buckets(1, 10, 400), std::invalid_argument) << "overflows to +Inf";
}

TEST(MetricsExposition, LabelValueReplacesInvalidUtf8) {
  EXPECT_EQ(label_value("fashion-mnist"), "fashion-mnist");
  EXPECT_EQ(label_value("caf\xC3\xA9 \xE2\x9C\x93"), "caf\xC3\xA9 \xE2\x9C\x93") << "valid UTF-8 is kept";
  EXPECT_EQ(label_value("a\xFF"
                        "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(label_value("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD") << "an overlong '/' is two bad bytes";
  EXPECT_EQ(label_value("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD") << "a surrogate";
  EXPECT_EQ(label_value("\xE2\x9C"), "\xEF\xBF\xBD\xEF\xBF\xBD") << "a truncated sequence";
}

}  // namespace
}  // namespace tessera::metrics
