// A plugin's own metrics, served by the kernel's `GET /metrics` (Prometheus text format 0.0.4)
// beside the kernel's.
//
// A plugin registers them through PluginContext::metrics(), in configure() or start(). Names
// follow Prometheus rules and must begin with `svc_<plugin>_` (the plugin's name, dots and dashes
// as underscores), so two plugins never collide; a counter's name, and only a counter's, ends in
// `_total`. Asking counter(), gauge() or histogram() again for the same name and labels returns
// the same series; the same name with another type or help is refused, and so is registering a
// *Function series twice. Labels are fixed per series: register one series per label set (keep
// the sets few and bounded; never put an id or an address in a label; `le` is the histogram's).
//
// Updating a counter, gauge or histogram is a few relaxed atomic operations, safe from any thread.
// A *Function reading is called at scrape time on an operator request thread: keep it cheap, and
// let it throw only when it cannot read (that sample is then left out of the scrape).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace svc::sdk {

/// A series' labels: name → value.
using MetricLabels = std::map<std::string, std::string>;

/// A number that only goes up (restarts from zero with the process).
class Counter {
 public:
  virtual ~Counter();
  /// @param by how much, >= 0 (a negative amount is ignored).
  virtual void increment(double by = 1) = 0;
  /// @return the current value.
  virtual double value() const = 0;
};

/// A number that goes up and down.
class Gauge {
 public:
  virtual ~Gauge();
  virtual void set(double value) = 0;
  /// @param by how much to add (negative to subtract).
  virtual void add(double by) = 0;
  virtual double value() const = 0;
};

/// Observations counted into buckets (cumulative in the exposition), with their sum and count.
class Histogram {
 public:
  virtual ~Histogram();
  virtual void observe(double value) = 0;
};

/// Where a plugin registers its metrics. The returned objects are shared with the kernel: keep
/// them as long as you like, update them from any thread.
class MetricRegistry {
 public:
  virtual ~MetricRegistry();
  /// @param name `svc_<plugin>_..._total`. @param help one line. @param labels fixed labels.
  /// @throws std::invalid_argument for a bad or foreign name, a clash or bad labels.
  virtual std::shared_ptr<Counter> counter(const std::string& name, const std::string& help,
                                           const MetricLabels& labels = {}) = 0;
  virtual std::shared_ptr<Gauge> gauge(const std::string& name, const std::string& help,
                                       const MetricLabels& labels = {}) = 0;
  /// @param buckets upper bounds, increasing (the `+Inf` bucket is implied).
  virtual std::shared_ptr<Histogram> histogram(const std::string& name, const std::string& help,
                                               std::vector<double> buckets,
                                               const MetricLabels& labels = {}) = 0;
  /// A gauge whose value is read at scrape time (a queue's length, a pool's size).
  virtual void gaugeFunction(const std::string& name, const std::string& help,
                             std::function<double()> read, const MetricLabels& labels = {}) = 0;
  /// A counter whose value is read at scrape time (an atomic the plugin's code already keeps).
  virtual void counterFunction(const std::string& name, const std::string& help,
                               std::function<double()> read, const MetricLabels& labels = {}) = 0;
};

}  // namespace svc::sdk
