// MetricsRegistry: a small Prometheus text-format registry. Every family is registered once
// (by the server, and later by the cache) and written once with its HELP and TYPE lines, so a
// scrape never repeats a family. Counters and histograms take label values per sample; gauges
// may be computed at scrape time.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace qmlx::server {

using LabelValues = std::vector<std::string>;

class MetricFamily {
 public:
  MetricFamily(std::string name, std::string help, std::vector<std::string> label_names);
  virtual ~MetricFamily() = default;
  const std::string& name() const { return name_; }
  virtual const char* type() const = 0;
  // Appends the HELP and TYPE lines and every sample.
  void write(std::string& out) const;

 protected:
  virtual void write_samples(std::string& out) const = 0;
  // `name{a="x",b="y"}` (or just `name`) with `extra` appended as one more label.
  std::string series(const std::string& suffix, const LabelValues& values,
                     const std::string& extra = "") const;
  void check_arity(const LabelValues& values) const;

  std::string name_;
  std::string help_;
  std::vector<std::string> label_names_;
  mutable std::mutex mutex_;
};

class Counter : public MetricFamily {
 public:
  using MetricFamily::MetricFamily;
  const char* type() const override { return "counter"; }
  void add(double amount, const LabelValues& values = {});
  // Mirrors a total kept elsewhere (the cache's own counters), refreshed at scrape time.
  void set_total(double total, const LabelValues& values = {});
  double value(const LabelValues& values = {}) const;

 private:
  void write_samples(std::string& out) const override;
  std::map<LabelValues, double> values_;
};

class Gauge : public MetricFamily {
 public:
  using MetricFamily::MetricFamily;
  const char* type() const override { return "gauge"; }
  void set(double value, const LabelValues& values = {});
  void add(double amount, const LabelValues& values = {});
  double value(const LabelValues& values = {}) const;
  // The gauge's (unlabelled) value is computed by `fn` at every scrape.
  void set_function(std::function<double()> fn);

 private:
  void write_samples(std::string& out) const override;
  std::map<LabelValues, double> values_;
  std::function<double()> fn_;
};

class Histogram : public MetricFamily {
 public:
  Histogram(std::string name, std::string help, std::vector<double> bounds,
            std::vector<std::string> label_names = {});
  const char* type() const override { return "histogram"; }
  void observe(double value, const LabelValues& values = {});
  // Mirrors a histogram kept elsewhere with the same bounds: per-bucket (non-cumulative)
  // counts, one per bound (observations above the last bound are only in `count`).
  void set_series(const std::vector<uint64_t>& buckets, uint64_t count, double sum,
                  const LabelValues& values = {});
  uint64_t count(const LabelValues& values = {}) const;

 private:
  struct Series {
    std::vector<uint64_t> buckets;  // non-cumulative, one per bound
    uint64_t count = 0;
    double sum = 0;
  };
  void write_samples(std::string& out) const override;
  std::vector<double> bounds_;
  std::map<LabelValues, Series> series_;
};

class MetricsRegistry {
 public:
  // Each returns the family registered under `name`, creating it on first use; asking for an
  // existing name with another type throws std::logic_error (a programming error).
  Counter& counter(const std::string& name, const std::string& help,
                   std::vector<std::string> label_names = {});
  Gauge& gauge(const std::string& name, const std::string& help,
               std::vector<std::string> label_names = {});
  Histogram& histogram(const std::string& name, const std::string& help, std::vector<double> bounds,
                       std::vector<std::string> label_names = {});

  // Runs `refresh` at the start of every scrape (families mirrored from another component).
  void on_scrape(std::function<void()> refresh);

  // The Prometheus text exposition (version 0.0.4) of every family, in registration order.
  std::string expose() const;

 private:
  std::vector<std::function<void()>> scrape_hooks_;
  template <typename T, typename... Args>
  T& get_or_add(const std::string& name, Args&&... args);

  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<MetricFamily>> families_;
};

// Formats a sample value as Prometheus expects (+Inf, integers without a fraction).
std::string format_metric_value(double value);

}  // namespace qmlx::server
