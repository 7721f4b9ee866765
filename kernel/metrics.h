// Counters and histograms for GET /metrics (Prometheus text format 0.0.4).
//
// Each route gets its own RouteStats of atomics, found once and then updated without a lock, so
// recording a request costs a few atomic increments on the hot path. Plugins register their own
// series through registryFor() (the SDK's MetricRegistry); the conventional process_* figures are
// read from /proc/self at each scrape.
#pragma once

#include <svc/sdk/metrics.h>

#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace svc::kernel {

/// One route's (method + pattern) request counts by status and latency histogram.
struct RouteStats {
  static constexpr std::array<double, 12> kBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                      0.05,   0.1,   0.25,   0.5,   1.0,  5.0};
  std::string method;
  std::string route;
  std::array<std::atomic<std::uint64_t>, 600> by_status{};  ///< index: HTTP status (100-599)
  std::array<std::atomic<std::uint64_t>, kBuckets.size()> buckets{};
  std::atomic<std::uint64_t> count{0};
  std::atomic<std::uint64_t> sum_micros{0};

  /// Records one finished request.
  void observe(int status, double seconds);
};

class Metrics {
 public:
  /// @return the stats for a method and route pattern, created on first use; stable for the life
  /// of this object.
  RouteStats& stats(const std::string& method, const std::string& route);
  /// Records one finished request (looks the route up; prefer stats().observe on hot paths).
  void observe(const std::string& method, const std::string& route, int status, double seconds);
  /// Adds a gauge read at scrape time. @param name metric name. @param help its help line.
  void gauge(const std::string& name, const std::string& help, std::function<double()> read);
  /// @return the registry a plugin registers its series in: every name must begin with
  /// `svc_<plugin>_` (the name's dots and dashes as underscores). Valid as long as this object.
  std::unique_ptr<sdk::MetricRegistry> registryFor(const std::string& plugin);
  /// @return the exposition text: the kernel's series, the plugins', then process_*.
  std::string render() const;

  /// One family of plugin series (a name, its type and help, one series per label set).
  struct Series;
  struct Family {
    std::string type;  ///< counter, gauge or histogram
    std::string help;
    std::map<std::string, std::shared_ptr<Series>> series;  ///< by rendered labels
  };
  /// Adds (or finds) a plugin series; what the registries call. @throws std::invalid_argument.
  std::shared_ptr<Series> series(const std::string& name, const std::string& type,
                                 const std::string& help, const sdk::MetricLabels& labels,
                                 const std::function<std::shared_ptr<Series>()>& make);

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, std::unique_ptr<RouteStats>> routes_;
  std::map<std::string, std::pair<std::string, std::function<double()>>> gauges_;
  std::map<std::string, Family> families_;
};

/// What /proc/self says about this process, for the process_* metrics.
struct ProcessFigures {
  double cpu_seconds = 0;         ///< user + system
  double resident_bytes = 0;      ///< resident set size
  double virtual_bytes = 0;       ///< virtual memory size
  double start_time_seconds = 0;  ///< since the epoch
  double open_fds = 0;            ///< entries of /proc/self/fd
  double max_fds = 0;             ///< the open-files soft limit
  bool ok = false;                ///< false when /proc/self/stat could not be read
};
/// @return the figures now.
ProcessFigures readProcessFigures();
/// @return whether a metric name follows Prometheus's rule `[a-zA-Z_:][a-zA-Z0-9_:]*`.
bool validMetricName(const std::string& name);

}  // namespace svc::kernel
