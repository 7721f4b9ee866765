// Counters and histograms for GET /metrics (Prometheus text format 0.0.4).
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>

namespace svc::kernel {

class Metrics {
 public:
  /// Records one finished request. @param route the route pattern (or "unmatched").
  void observe(const std::string& method, const std::string& route, int status, double seconds);
  /// Adds a gauge read at scrape time. @param name metric name. @param help its help line.
  void gauge(const std::string& name, const std::string& help, std::function<double()> read);
  /// @return the exposition text.
  std::string render() const;

 private:
  static constexpr std::array<double, 12> kBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                      0.05,   0.1,   0.25,   0.5,   1.0,  5.0};
  struct Histogram {
    std::array<std::uint64_t, kBuckets.size()> buckets{};
    std::uint64_t count = 0;
    double sum = 0;
  };
  mutable std::mutex mutex_;
  std::map<std::tuple<std::string, std::string, int>, std::uint64_t> requests_;
  std::map<std::pair<std::string, std::string>, Histogram> latency_;
  std::map<std::string, std::pair<std::string, std::function<double()>>> gauges_;
};

}  // namespace svc::kernel
