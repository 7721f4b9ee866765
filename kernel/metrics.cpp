#include "metrics.h"

#include <sstream>
#include <tuple>

namespace svc::kernel {

namespace {
std::string escapeLabel(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out;
}
}  // namespace

void Metrics::observe(const std::string& method, const std::string& route, int status,
                      double seconds) {
  std::lock_guard lock(mutex_);
  ++requests_[std::make_tuple(method, route, status)];
  Histogram& h = latency_[std::make_pair(method, route)];
  for (std::size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) ++h.buckets[i];
  }
  ++h.count;
  h.sum += seconds;
}

void Metrics::gauge(const std::string& name, const std::string& help,
                    std::function<double()> read) {
  std::lock_guard lock(mutex_);
  gauges_[name] = {help, std::move(read)};
}

std::string Metrics::render() const {
  std::ostringstream out;
  std::lock_guard lock(mutex_);
  out << "# HELP svc_http_requests_total HTTP requests by method, route and status.\n"
      << "# TYPE svc_http_requests_total counter\n";
  for (auto& [key, count] : requests_) {
    out << "svc_http_requests_total{method=\"" << escapeLabel(std::get<0>(key)) << "\",route=\""
        << escapeLabel(std::get<1>(key)) << "\",status=\"" << std::get<2>(key) << "\"} " << count
        << "\n";
  }
  out << "# HELP svc_http_request_duration_seconds Time from request to response.\n"
      << "# TYPE svc_http_request_duration_seconds histogram\n";
  for (auto& [key, h] : latency_) {
    std::string labels =
        "method=\"" + escapeLabel(key.first) + "\",route=\"" + escapeLabel(key.second) + "\"";
    for (std::size_t i = 0; i < kBuckets.size(); ++i) {
      out << "svc_http_request_duration_seconds_bucket{" << labels << ",le=\"" << kBuckets[i]
          << "\"} " << h.buckets[i] << "\n";
    }
    out << "svc_http_request_duration_seconds_bucket{" << labels << ",le=\"+Inf\"} " << h.count
        << "\n";
    out << "svc_http_request_duration_seconds_sum{" << labels << "} " << h.sum << "\n";
    out << "svc_http_request_duration_seconds_count{" << labels << "} " << h.count << "\n";
  }
  for (auto& [name, gauge] : gauges_) {
    out << "# HELP " << name << " " << gauge.first << "\n# TYPE " << name << " gauge\n"
        << name << " " << gauge.second() << "\n";
  }
  return out.str();
}

}  // namespace svc::kernel
