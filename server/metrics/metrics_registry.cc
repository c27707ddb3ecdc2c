#include "server/metrics/metrics_registry.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>

namespace tessera::metrics {
namespace {

[[noreturn]] void misuse(const std::string& metric, const std::string& what) {
  throw std::invalid_argument("metrics: " + metric + ": " + what);
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

const char* type_name(MetricType type) {
  switch (type) {
    case MetricType::kCounter: return "counter";
    case MetricType::kGauge: return "gauge";
    case MetricType::kHistogram: return "histogram";
  }
  return "untyped";
}

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

// Prometheus rejects a whole scrape with a non-UTF-8 label value, so each bad byte becomes U+FFFD.
std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_sequence_length(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s, i, n);
      i += n;
    }
  }
  return out;
}

// HELP text escapes backslash and newline; label values also the double quote.
std::string escape(std::string_view s, bool quote) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '"' && quote)
      out += "\\\"";
    else
      out += c;
  }
  return out;
}

// `{a="x",b="y"}` (empty when there are no labels), plus an optional trailing le="...".
std::string label_block(const std::vector<std::string>& names, const std::vector<std::string>& values,
                        const std::string& le = {}) {
  std::string out;
  const auto add = [&out](std::string_view name, std::string_view escaped_value) {
    out += out.empty() ? '{' : ',';
    out.append(name).append("=\"").append(escaped_value).append("\"");
  };
  for (size_t i = 0; i < names.size(); ++i) add(names[i], escape(values[i], true));
  if (!le.empty()) add("le", le);
  if (!out.empty()) out += '}';
  return out;
}

void append_sample(std::string& out, const std::string& name, const std::string& labels, double v) {
  out += name;
  out += labels;
  out += ' ';
  out += format_value(v);
  out += '\n';
}

// The sample names a family writes (histograms: _bucket, _sum, _count).
std::vector<std::string> sample_names_of(const FamilyBase& family) {
  if (family.type() != MetricType::kHistogram) return {family.name()};
  return {family.name() + "_bucket", family.name() + "_sum", family.name() + "_count"};
}

}  // namespace

bool is_valid_metric_name(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

bool is_valid_label_name(std::string_view name) {
  return is_valid_metric_name(name) && name.find(':') == std::string_view::npos && name.substr(0, 2) != "__";
}

std::string format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::trunc(v) && std::fabs(v) <= 9007199254740992.0) {  // 2^53: exact as an integer
    return std::to_string(static_cast<long long>(v));
  }
  // The shortest digits that read back as `v`, laid out like Go's strconv 'g' (which Prometheus'
  // own clients use, so bucket labels such as le="0.0005" match theirs): an exponent only below
  // 1e-4 (integers above 2^53 are the other case, handled by to_chars the same way).
  char buf[64];
  auto result = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  const std::string_view scientific(buf, static_cast<size_t>(result.ptr - buf));
  const int exponent = std::stoi(std::string(scientific.substr(scientific.find('e') + 1)));
  if (exponent < -4 || exponent >= 21) return std::string(scientific);
  result = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
  return std::string(buf, result.ptr);
}

std::vector<double> exponential_buckets(double start, double factor, int count) {
  if (!(start > 0) || !(factor > 1) || count < 1 || !std::isfinite(start * std::pow(factor, count))) {
    throw std::invalid_argument("metrics: exponential_buckets needs start > 0, factor > 1, count >= 1");
  }
  std::vector<double> bounds;
  bounds.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) bounds.push_back(start * std::pow(factor, i));
  return bounds;
}

std::vector<double> linear_buckets(double start, double width, int count) {
  if (!std::isfinite(start) || !(width > 0) || count < 1 || !std::isfinite(start + width * count)) {
    throw std::invalid_argument("metrics: linear_buckets needs a finite start, width > 0, count >= 1");
  }
  std::vector<double> bounds;
  bounds.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) bounds.push_back(start + width * i);
  return bounds;
}

void Counter::inc(double v) {
  if (v > 0) value_.fetch_add(v, std::memory_order_relaxed);
}

double Gauge::value() const {
  std::lock_guard lock(callback_mu_);
  if (!callback_) return value_.load(std::memory_order_relaxed);
  try {
    return callback_();
  } catch (...) {
    return std::nan("");
  }
}

void Gauge::set_callback(std::function<double()> fn) {
  std::lock_guard lock(callback_mu_);
  callback_ = std::move(fn);
}

void Gauge::clear_callback() { set_callback(nullptr); }

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(std::make_unique<std::atomic<std::uint64_t>[]>(bounds_.size() + 1)) {}

void Histogram::observe(double v) {
  if (std::isnan(v)) return;
  // The first bound >= v ("le" is inclusive); past the last bound: the +Inf bucket.
  const size_t i = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
}

std::vector<std::uint64_t> Histogram::cumulative_counts() const {
  std::vector<std::uint64_t> out(bounds_.size() + 1);
  std::uint64_t total = 0;
  for (size_t i = 0; i < out.size(); ++i) out[i] = total += counts_[i].load(std::memory_order_relaxed);
  return out;
}

FamilyBase::FamilyBase(std::string name, std::string help, MetricType type, std::vector<std::string> label_names)
    : name_(std::move(name)), help_(std::move(help)), type_(type), label_names_(std::move(label_names)) {
  if (!is_valid_metric_name(name_)) misuse("'" + name_ + "'", "invalid metric name (want [a-zA-Z_:][a-zA-Z0-9_:]*)");
  if (help_.empty()) misuse(name_, "help text is required");
  const bool total = ends_with(name_, "_total");
  if (type_ == MetricType::kCounter && !total) misuse(name_, "a counter's name must end in _total");
  if (type_ != MetricType::kCounter && total) misuse(name_, "only counters may end in _total");
  std::set<std::string> seen;
  for (const std::string& label : label_names_) {
    if (!is_valid_label_name(label)) {
      misuse(name_, "invalid label name '" + label + "' (want [a-zA-Z_][a-zA-Z0-9_]*, not starting with __)");
    }
    if (!seen.insert(label).second) misuse(name_, "label '" + label + "' given twice");
    if (type_ == MetricType::kHistogram && label == "le") misuse(name_, "a histogram cannot have a label 'le'");
  }
}

std::vector<std::string> FamilyBase::values_in_order(const Labels& labels) const {
  std::vector<std::string> values(label_names_.size());
  std::vector<bool> given(label_names_.size(), false);
  for (const auto& [label, value] : labels) {
    const auto it = std::find(label_names_.begin(), label_names_.end(), label);
    if (it == label_names_.end()) misuse(name_, "unknown label '" + label + "'");
    const size_t i = static_cast<size_t>(it - label_names_.begin());
    if (given[i]) misuse(name_, "label '" + label + "' given twice");
    given[i] = true;
    values[i] = valid_utf8(value);
  }
  for (size_t i = 0; i < label_names_.size(); ++i) {
    if (!given[i]) misuse(name_, "label '" + label_names_[i] + "' missing");
  }
  return values;
}

template <typename Metric>
Family<Metric>::Family(std::string name, std::string help, MetricType type, std::vector<std::string> label_names,
                       std::vector<double> bounds)
    : FamilyBase(std::move(name), std::move(help), type, std::move(label_names)), bounds_(std::move(bounds)) {
  if constexpr (std::is_same_v<Metric, Histogram>) {
    if (bounds_.empty()) misuse(this->name(), "a histogram needs at least one finite bucket bound");
    for (size_t i = 0; i < bounds_.size(); ++i) {
      if (!std::isfinite(bounds_[i])) misuse(this->name(), "bucket bounds must be finite (+Inf is implicit)");
      if (i > 0 && !(bounds_[i - 1] < bounds_[i])) misuse(this->name(), "bucket bounds must be strictly increasing");
    }
  }
}

template <typename Metric>
Metric& Family<Metric>::with(const Labels& labels) {
  std::vector<std::string> values = values_in_order(labels);
  std::lock_guard lock(mu_);
  auto& child = children_[std::move(values)];
  if (!child) {
    if constexpr (std::is_same_v<Metric, Histogram>)
      child = std::make_unique<Histogram>(bounds_);
    else
      child = std::make_unique<Metric>();
  }
  return *child;
}

template <typename Metric>
void Family<Metric>::expose_to(std::string& out) const {
  // Children are never removed: pointers taken under the lock stay valid after it.
  std::vector<std::pair<const std::vector<std::string>*, const Metric*>> children;
  {
    std::lock_guard lock(mu_);
    for (const auto& [values, child] : children_) children.emplace_back(&values, child.get());
  }
  if (children.empty()) return;
  out += "# HELP " + name() + " " + escape(help(), false) + "\n";
  out += "# TYPE " + name() + " " + type_name(type()) + "\n";
  for (const auto& [values, child] : children) {
    if constexpr (std::is_same_v<Metric, Histogram>) {
      const std::vector<std::uint64_t> counts = child->cumulative_counts();
      for (size_t i = 0; i < counts.size(); ++i) {
        const std::string le = i < bounds_.size() ? format_value(bounds_[i]) : "+Inf";
        append_sample(out, name() + "_bucket", label_block(label_names(), *values, le), static_cast<double>(counts[i]));
      }
      const std::string labels = label_block(label_names(), *values);
      append_sample(out, name() + "_sum", labels, child->sum());
      append_sample(out, name() + "_count", labels, static_cast<double>(counts.back()));
    } else {
      append_sample(out, name(), label_block(label_names(), *values), child->value());
    }
  }
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

CounterFamily& Registry::counter(const std::string& name, const std::string& help,
                                 const std::vector<std::string>& label_names) {
  return static_cast<CounterFamily&>(
      add(std::make_unique<CounterFamily>(name, help, MetricType::kCounter, label_names)));
}

GaugeFamily& Registry::gauge(const std::string& name, const std::string& help,
                             const std::vector<std::string>& label_names) {
  return static_cast<GaugeFamily&>(add(std::make_unique<GaugeFamily>(name, help, MetricType::kGauge, label_names)));
}

HistogramFamily& Registry::histogram(const std::string& name, const std::string& help,
                                     const std::vector<std::string>& label_names, std::vector<double> bounds) {
  if (!bounds.empty() && bounds.back() == std::numeric_limits<double>::infinity()) bounds.pop_back();
  return static_cast<HistogramFamily&>(
      add(std::make_unique<HistogramFamily>(name, help, MetricType::kHistogram, label_names, std::move(bounds))));
}

FamilyBase& Registry::add(std::unique_ptr<FamilyBase> family) {
  std::lock_guard lock(mu_);
  const std::string& name = family->name();
  if (families_.count(name)) misuse(name, "a family of this name is already registered");
  std::vector<std::string> names = sample_names_of(*family);
  if (names.front() != name) names.push_back(name);  // a histogram's own name is taken too
  for (const std::string& used : names) {
    if (const auto it = used_names_.find(used); it != used_names_.end()) {
      misuse(name, "the name '" + used + "' is already used by family '" + it->second + "'");
    }
  }
  for (const std::string& used : names) used_names_[used] = name;
  FamilyBase& added = *family;
  families_.emplace(name, std::move(family));
  // A family without labels has exactly one child: create it so it is exposed from the start.
  if (added.label_names().empty()) {
    switch (added.type()) {
      case MetricType::kCounter: static_cast<CounterFamily&>(added).with(); break;
      case MetricType::kGauge: static_cast<GaugeFamily&>(added).with(); break;
      case MetricType::kHistogram: static_cast<HistogramFamily&>(added).with(); break;
    }
  }
  return added;
}

std::string Registry::expose() const {
  // Families are never removed: expose them without the registry lock (gauge callbacks run).
  std::vector<const FamilyBase*> families;
  {
    std::lock_guard lock(mu_);
    for (const auto& [name, family] : families_) families.push_back(family.get());
  }
  std::string out;
  for (const FamilyBase* family : families) family->expose_to(out);
  return out;
}

}  // namespace tessera::metrics
