// A small, thread-safe Prometheus metrics registry and its text exposition (format 0.0.4).
//
// Written here because prometheus-cpp is not packaged in Debian 12 and the project takes its
// dependencies from Debian only. The output follows the text exposition format spec:
// https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format
// (and the naming rules of https://prometheus.io/docs/concepts/data_model/).
//
// Usage: register families once at startup, create the children you need, keep the returned
// references (they stay valid as long as the Registry) and update them on hot paths:
//
//   Registry registry;
//   Counter& ok = registry.counter("tessera_requests_total", "Requests answered.", {"model", "code"})
//                     .with({{"model", "fashion-mnist"}, {"code", "OK"}});
//   ok.inc();
//   std::string text = registry.expose();  // serve with Content-Type: kContentType
//
// Misuse is a programming error and throws std::invalid_argument with a message naming the
// metric: invalid metric or label names, a family name registered twice (or colliding with
// another family's sample names, e.g. a gauge `x_count` next to a histogram `x`), a counter
// without the `_total` suffix or another type with it (promtool lints both), empty help, bad
// histogram bounds, and with() given label names that differ from the family's.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::metrics {

// The Content-Type of Registry::expose()'s output.
inline constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

enum class MetricType { kCounter, kGauge, kHistogram };

// Label name/value pairs naming one child: {{"model", "fashion-mnist"}, {"device", "emu"}}.
// The order does not matter; the set of names must equal the family's label names.
using Labels = std::vector<std::pair<std::string, std::string>>;

// A monotonically increasing value, e.g. requests served.
class Counter {
 public:
  // Adds `v`; negative and NaN increments are ignored (a counter never goes down).
  void inc(double v = 1.0);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// A value that goes up and down, set directly or read from a callback at scrape time.
class Gauge {
 public:
  void set(double v) { value_.store(v, std::memory_order_relaxed); }
  void inc(double v = 1.0) { value_.fetch_add(v, std::memory_order_relaxed); }
  void dec(double v = 1.0) { value_.fetch_sub(v, std::memory_order_relaxed); }
  // The exposed value: the callback's result when one is set, else the stored value.
  double value() const;

  // From now on each scrape calls `fn` (on the scraping thread) for the value; set/inc/dec no
  // longer show. A throwing callback exposes NaN. `fn` must not call set_callback/clear_callback
  // on this gauge. An empty `fn` is the same as clear_callback().
  void set_callback(std::function<double()> fn);
  // Back to the stored value. When this returns, the callback is not running and never will
  // again: call it before whatever the callback reads is destroyed.
  void clear_callback();

 private:
  std::atomic<double> value_{0.0};
  mutable std::mutex callback_mu_;  // held while the callback runs
  std::function<double()> callback_;
};

// Observations counted into fixed buckets, e.g. request latencies in seconds.
class Histogram {
 public:
  // `bounds`: the finite bucket upper bounds, strictly increasing (the +Inf bucket is implicit).
  explicit Histogram(std::vector<double> bounds);
  // Counts `v` into the first bucket whose bound is >= v; NaN is ignored.
  void observe(double v);

  const std::vector<double>& bounds() const { return bounds_; }
  // Cumulative counts, one per bound plus the +Inf bucket last (the total count).
  std::vector<std::uint64_t> cumulative_counts() const;
  double sum() const { return sum_.load(std::memory_order_relaxed); }

 private:
  const std::vector<double> bounds_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> counts_;  // per bucket, not cumulative
  std::atomic<double> sum_{0.0};
};

// What the three family kinds share: name, help, type and label names.
class FamilyBase {
 public:
  virtual ~FamilyBase() = default;
  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  MetricType type() const { return type_; }
  const std::vector<std::string>& label_names() const { return label_names_; }

  // Appends this family's HELP, TYPE and samples; nothing when it has no children.
  virtual void expose_to(std::string& out) const = 0;

 protected:
  FamilyBase(std::string name, std::string help, MetricType type, std::vector<std::string> label_names);
  // The values of `labels` in label_names() order (invalid UTF-8 replaced); throws on a mismatch.
  std::vector<std::string> values_in_order(const Labels& labels) const;

 private:
  std::string name_;
  std::string help_;
  MetricType type_;
  std::vector<std::string> label_names_;
};

// A family of one metric kind; children are keyed by label values and never removed.
template <typename Metric>
class Family : public FamilyBase {
 public:
  // Internal: use Registry::counter/gauge/histogram. `bounds` only for histograms.
  Family(std::string name, std::string help, MetricType type, std::vector<std::string> label_names,
         std::vector<double> bounds = {});

  // The child for `labels`, created on first use. The reference stays valid for the registry's
  // lifetime: look it up once, not on every update. A family without labels: with().
  Metric& with(const Labels& labels = {});

  void expose_to(std::string& out) const override;

 private:
  const std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<Metric>> children_;  // sorted: stable order
};

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;
using HistogramFamily = Family<Histogram>;

// Owns the families; thread-safe. Returned families and children live as long as the registry.
class Registry {
 public:
  // Registers a family (throws std::invalid_argument on misuse, see the top of this file). A
  // family without label names gets its one child at once, so it is exposed (as 0) from the start.
  CounterFamily& counter(const std::string& name, const std::string& help,
                         const std::vector<std::string>& label_names = {});
  GaugeFamily& gauge(const std::string& name, const std::string& help,
                     const std::vector<std::string>& label_names = {});
  // `bounds`: finite, strictly increasing bucket upper bounds (a trailing +Inf is dropped); no
  // label may be named "le".
  HistogramFamily& histogram(const std::string& name, const std::string& help,
                             const std::vector<std::string>& label_names, std::vector<double> bounds);

  // The text exposition (format 0.0.4): families sorted by name, children by label values.
  // Gauge callbacks run here, on the caller's thread, with no registry lock held.
  std::string expose() const;

 private:
  // Checks `family`'s names against the rules and the registered families, then adds it.
  FamilyBase& add(std::unique_ptr<FamilyBase> family);

  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<FamilyBase>> families_;  // by name
  // Family names and the sample names they write (x_bucket, ...) -> the family using each.
  std::map<std::string, std::string> used_names_;
};

// `count` bounds start, start*factor, start*factor^2, ... (start > 0, factor > 1, count >= 1).
std::vector<double> exponential_buckets(double start, double factor, int count);
// `count` bounds start, start+width, start+2*width, ... (width > 0, count >= 1).
std::vector<double> linear_buckets(double start, double width, int count);

// A sample value as the exposition writes it: "+Inf", "-Inf", "NaN", integers without an
// exponent (up to 2^53), otherwise the shortest text that reads back as the same double, with an
// exponent only below 1e-4 or above 1e21 ("0.0005", "1234567.5", "5e-05", "1e+300").
std::string format_value(double v);
// Whether `name` is a valid metric name ([a-zA-Z_:][a-zA-Z0-9_:]*).
bool is_valid_metric_name(std::string_view name);
// Whether `name` is a valid label name ([a-zA-Z_][a-zA-Z0-9_]*, not starting with "__").
bool is_valid_label_name(std::string_view name);

}  // namespace tessera::metrics
