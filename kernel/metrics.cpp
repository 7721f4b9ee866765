#include "metrics.h"

#include <sstream>

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

void RouteStats::observe(int status, double seconds) {
  if (status >= 100 && status < 600)
    by_status[static_cast<std::size_t>(status)].fetch_add(1, std::memory_order_relaxed);
  // One bucket per observation; render() adds them up into Prometheus's cumulative buckets.
  for (std::size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) {
      buckets[i].fetch_add(1, std::memory_order_relaxed);
      break;
    }
  }
  count.fetch_add(1, std::memory_order_relaxed);
  sum_micros.fetch_add(static_cast<std::uint64_t>(seconds * 1e6), std::memory_order_relaxed);
}

RouteStats& Metrics::stats(const std::string& method, const std::string& route) {
  std::lock_guard lock(mutex_);
  auto& slot = routes_[std::make_pair(method, route)];
  if (!slot) {
    slot = std::make_unique<RouteStats>();
    slot->method = method;
    slot->route = route;
  }
  return *slot;
}

void Metrics::observe(const std::string& method, const std::string& route, int status,
                      double seconds) {
  stats(method, route).observe(status, seconds);
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
  for (auto& [key, s] : routes_) {
    for (std::size_t status = 100; status < s->by_status.size(); ++status) {
      std::uint64_t n = s->by_status[status].load(std::memory_order_relaxed);
      if (n == 0) continue;
      out << "svc_http_requests_total{method=\"" << escapeLabel(s->method) << "\",route=\""
          << escapeLabel(s->route) << "\",status=\"" << status << "\"} " << n << "\n";
    }
  }
  out << "# HELP svc_http_request_duration_seconds Time from request to response.\n"
      << "# TYPE svc_http_request_duration_seconds histogram\n";
  for (auto& [key, s] : routes_) {
    std::string labels =
        "method=\"" + escapeLabel(s->method) + "\",route=\"" + escapeLabel(s->route) + "\"";
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < RouteStats::kBuckets.size(); ++i) {
      cumulative += s->buckets[i].load();
      out << "svc_http_request_duration_seconds_bucket{" << labels << ",le=\""
          << RouteStats::kBuckets[i] << "\"} " << cumulative << "\n";
    }
    std::uint64_t count = s->count.load();
    out << "svc_http_request_duration_seconds_bucket{" << labels << ",le=\"+Inf\"} " << count
        << "\n";
    out << "svc_http_request_duration_seconds_sum{" << labels << "} "
        << static_cast<double>(s->sum_micros.load()) / 1e6 << "\n";
    out << "svc_http_request_duration_seconds_count{" << labels << "} " << count << "\n";
  }
  for (auto& [name, gauge] : gauges_) {
    out << "# HELP " << name << " " << gauge.first << "\n# TYPE " << name << " gauge\n"
        << name << " " << gauge.second() << "\n";
  }
  return out.str();
}

}  // namespace svc::kernel
