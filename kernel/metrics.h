// Counters and histograms for GET /metrics (Prometheus text format 0.0.4).
//
// Each route gets its own RouteStats of atomics, found once and then updated without a lock, so
// recording a request costs a few atomic increments on the hot path.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

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
  /// @return the exposition text.
  std::string render() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, std::unique_ptr<RouteStats>> routes_;
  std::map<std::string, std::pair<std::string, std::function<double()>>> gauges_;
};

}  // namespace svc::kernel
