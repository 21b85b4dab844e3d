#include "server/metrics/metrics.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace qmlx::server {
namespace {

std::string escape_label(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

std::string escape_help(const std::string& help) {
  std::string out;
  for (char c : help) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else
      out.push_back(c);
  }
  return out;
}

}  // namespace

std::string format_metric_value(double value) {
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (std::isnan(value)) return "NaN";
  char buf[64];
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", value);
    return buf;
  }
  // The shortest of %.15g / %.17g that reads back as the same double.
  std::snprintf(buf, sizeof buf, "%.15g", value);
  if (std::strtod(buf, nullptr) != value) std::snprintf(buf, sizeof buf, "%.17g", value);
  return buf;
}

MetricFamily::MetricFamily(std::string name, std::string help, std::vector<std::string> label_names)
    : name_(std::move(name)), help_(std::move(help)), label_names_(std::move(label_names)) {}

void MetricFamily::write(std::string& out) const {
  out += "# HELP " + name_ + " " + escape_help(help_) + "\n";
  out += "# TYPE " + name_ + " " + type() + "\n";
  std::lock_guard<std::mutex> lock(mutex_);
  write_samples(out);
}

std::string MetricFamily::series(const std::string& suffix, const LabelValues& values,
                                 const std::string& extra) const {
  std::string labels;
  for (size_t i = 0; i < label_names_.size(); ++i) {
    if (!labels.empty()) labels += ",";
    labels += label_names_[i] + "=\"" + escape_label(values[i]) + "\"";
  }
  if (!extra.empty()) labels += (labels.empty() ? "" : ",") + extra;
  std::string s = name_ + suffix;
  if (!labels.empty()) s += "{" + labels + "}";
  return s;
}

void MetricFamily::check_arity(const LabelValues& values) const {
  if (values.size() != label_names_.size()) {
    throw std::logic_error("metric " + name_ + ": wrong number of label values");
  }
}

void Counter::add(double amount, const LabelValues& values) {
  check_arity(values);
  std::lock_guard<std::mutex> lock(mutex_);
  values_[values] += amount;
}

void Counter::set_total(double total, const LabelValues& values) {
  check_arity(values);
  std::lock_guard<std::mutex> lock(mutex_);
  values_[values] = total;
}

double Counter::value(const LabelValues& values) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = values_.find(values);
  return it == values_.end() ? 0 : it->second;
}

void Counter::write_samples(std::string& out) const {
  // An unlabelled counter is shown at 0 from the start, so rate() works from the first scrape.
  if (values_.empty() && label_names_.empty()) out += series("", {}) + " 0\n";
  for (const auto& [labels, v] : values_) {
    out += series("", labels) + " " + format_metric_value(v) + "\n";
  }
}

void Gauge::set(double value, const LabelValues& values) {
  check_arity(values);
  std::lock_guard<std::mutex> lock(mutex_);
  values_[values] = value;
}

void Gauge::add(double amount, const LabelValues& values) {
  check_arity(values);
  std::lock_guard<std::mutex> lock(mutex_);
  values_[values] += amount;
}

double Gauge::value(const LabelValues& values) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (fn_) return fn_();
  auto it = values_.find(values);
  return it == values_.end() ? 0 : it->second;
}

void Gauge::set_function(std::function<double()> fn) {
  std::lock_guard<std::mutex> lock(mutex_);
  fn_ = std::move(fn);
}

void Gauge::write_samples(std::string& out) const {
  if (fn_) {
    out += series("", {}) + " " + format_metric_value(fn_()) + "\n";
    return;
  }
  if (values_.empty() && label_names_.empty()) out += series("", {}) + " 0\n";
  for (const auto& [labels, v] : values_) {
    out += series("", labels) + " " + format_metric_value(v) + "\n";
  }
}

Histogram::Histogram(std::string name, std::string help, std::vector<double> bounds,
                     std::vector<std::string> label_names)
    : MetricFamily(std::move(name), std::move(help), std::move(label_names)),
      bounds_(std::move(bounds)) {
  for (size_t i = 1; i < bounds_.size(); ++i) {
    if (!(bounds_[i - 1] < bounds_[i])) {
      throw std::logic_error("histogram " + name_ + ": bounds must increase");
    }
  }
}

void Histogram::observe(double value, const LabelValues& values) {
  check_arity(values);
  std::lock_guard<std::mutex> lock(mutex_);
  Series& s = series_[values];
  if (s.buckets.empty()) s.buckets.assign(bounds_.size(), 0);
  for (size_t i = 0; i < bounds_.size(); ++i) {
    if (value <= bounds_[i]) {
      ++s.buckets[i];
      break;
    }
  }
  ++s.count;
  s.sum += value;
}

uint64_t Histogram::count(const LabelValues& values) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = series_.find(values);
  return it == series_.end() ? 0 : it->second.count;
}

void Histogram::write_samples(std::string& out) const {
  auto write_series = [&](const LabelValues& labels, const Series& s) {
    uint64_t cumulative = 0;
    for (size_t i = 0; i < bounds_.size(); ++i) {
      cumulative += s.buckets.empty() ? 0 : s.buckets[i];
      out += series("_bucket", labels, "le=\"" + format_metric_value(bounds_[i]) + "\"") + " " +
             std::to_string(cumulative) + "\n";
    }
    out += series("_bucket", labels, "le=\"+Inf\"") + " " + std::to_string(s.count) + "\n";
    out += series("_sum", labels) + " " + format_metric_value(s.sum) + "\n";
    out += series("_count", labels) + " " + std::to_string(s.count) + "\n";
  };
  if (series_.empty() && label_names_.empty()) write_series({}, Series{});
  for (const auto& [labels, s] : series_) write_series(labels, s);
}

template <typename T, typename... Args>
T& MetricsRegistry::get_or_add(const std::string& name, Args&&... args) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& family : families_) {
    if (family->name() != name) continue;
    if (auto* typed = dynamic_cast<T*>(family.get())) return *typed;
    throw std::logic_error("metric " + name + " registered twice with different types");
  }
  families_.push_back(std::make_unique<T>(name, std::forward<Args>(args)...));
  return static_cast<T&>(*families_.back());
}

Counter& MetricsRegistry::counter(const std::string& name, const std::string& help,
                                  std::vector<std::string> label_names) {
  return get_or_add<Counter>(name, help, std::move(label_names));
}

Gauge& MetricsRegistry::gauge(const std::string& name, const std::string& help,
                              std::vector<std::string> label_names) {
  return get_or_add<Gauge>(name, help, std::move(label_names));
}

Histogram& MetricsRegistry::histogram(const std::string& name, const std::string& help,
                                      std::vector<double> bounds,
                                      std::vector<std::string> label_names) {
  return get_or_add<Histogram>(name, help, std::move(bounds), std::move(label_names));
}

void Histogram::set_series(const std::vector<uint64_t>& buckets, uint64_t count, double sum,
                           const LabelValues& values) {
  check_arity(values);
  if (buckets.size() < bounds_.size()) throw std::logic_error(name_ + ": bucket count mismatch");
  std::lock_guard<std::mutex> lock(mutex_);
  Series& s = series_[values];
  s.buckets.assign(buckets.begin(), buckets.begin() + std::ptrdiff_t(bounds_.size()));
  s.count = count;
  s.sum = sum;
}

void MetricsRegistry::on_scrape(std::function<void()> refresh) {
  std::lock_guard<std::mutex> lock(mutex_);
  scrape_hooks_.push_back(std::move(refresh));
}

std::string MetricsRegistry::expose() const {
  std::vector<std::function<void()>> hooks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    hooks = scrape_hooks_;
  }
  for (const auto& refresh : hooks) refresh();
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  for (const auto& family : families_) family->write(out);
  return out;
}

}  // namespace qmlx::server
