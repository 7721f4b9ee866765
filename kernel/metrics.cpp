#include "metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

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
// Adds to an atomic double (C++17 has no fetch_add for it).
void addTo(std::atomic<double>& target, double by) {
  double seen = target.load(std::memory_order_relaxed);
  while (!target.compare_exchange_weak(seen, seen + by, std::memory_order_relaxed)) {
  }
}

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  std::ostringstream out;
  out.precision(std::numeric_limits<double>::max_digits10);
  out << v;
  return out.str();
}

bool validLabelName(const std::string& name) {
  if (name.empty() || name.rfind("__", 0) == 0) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                    (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

}  // namespace

bool validMetricName(const std::string& name) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
                    (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

// A plugin's series: renders its own sample lines under the family's name.
struct Metrics::Series {
  virtual ~Series() = default;
  /// @param labels the rendered labels, without braces ("" for none).
  virtual void render(std::ostream& out, const std::string& name,
                      const std::string& labels) const = 0;
};

namespace {

std::string braces(const std::string& labels) {
  return labels.empty() ? std::string() : "{" + labels + "}";
}

// One number, a counter's or a gauge's, and how it is written.
class ValueSeries : public Metrics::Series {
 public:
  void render(std::ostream& out, const std::string& name,
              const std::string& labels) const override {
    out << name << braces(labels) << " " << number(current()) << "\n";
  }

 protected:
  double current() const { return value_.load(std::memory_order_relaxed); }
  std::atomic<double> value_{0};
};

class CounterSeries : public ValueSeries, public sdk::Counter {
 public:
  void increment(double by) override {
    if (by > 0) addTo(value_, by);
  }
  double value() const override { return current(); }
};

class GaugeSeries : public ValueSeries, public sdk::Gauge {
 public:
  void set(double v) override { value_.store(v, std::memory_order_relaxed); }
  void add(double by) override { addTo(value_, by); }
  double value() const override { return current(); }
};

class HistogramSeries : public Metrics::Series, public sdk::Histogram {
 public:
  explicit HistogramSeries(std::vector<double> bounds)
      : bounds_(std::move(bounds)), buckets_(new std::atomic<std::uint64_t>[bounds_.size()]) {
    for (std::size_t i = 0; i < bounds_.size(); ++i) buckets_[i] = 0;
  }
  void observe(double v) override {
    for (std::size_t i = 0; i < bounds_.size(); ++i) {
      if (v <= bounds_[i]) {
        buckets_[i].fetch_add(1, std::memory_order_relaxed);
        break;
      }
    }
    count_.fetch_add(1, std::memory_order_relaxed);
    addTo(sum_, v);
  }
  void render(std::ostream& out, const std::string& name,
              const std::string& labels) const override {
    const std::string sep = labels.empty() ? "" : labels + ",";
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < bounds_.size(); ++i) {
      cumulative += buckets_[i].load(std::memory_order_relaxed);
      out << name << "_bucket{" << sep << "le=\"" << number(bounds_[i]) << "\"} " << cumulative
          << "\n";
    }
    const std::uint64_t count = count_.load(std::memory_order_relaxed);
    out << name << "_bucket{" << sep << "le=\"+Inf\"} " << std::max(count, cumulative) << "\n"
        << name << "_sum" << braces(labels) << " " << number(sum_.load()) << "\n"
        << name << "_count" << braces(labels) << " " << std::max(count, cumulative) << "\n";
  }

 private:
  const std::vector<double> bounds_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> buckets_;
  std::atomic<std::uint64_t> count_{0};
  std::atomic<double> sum_{0};
};

class FunctionSeries : public Metrics::Series {
 public:
  explicit FunctionSeries(std::function<double()> read) : read_(std::move(read)) {}
  void render(std::ostream& out, const std::string& name,
              const std::string& labels) const override {
    double v = 0;
    try {
      v = read_();
    } catch (...) {
      return;  // cannot read now: the sample is left out of this scrape
    }
    out << name << braces(labels) << " " << number(v) << "\n";
  }

 private:
  std::function<double()> read_;
};

std::string pluginPrefix(const std::string& plugin) {
  std::string prefix = "svc_";
  for (char c : plugin) prefix.push_back(c == '.' || c == '-' ? '_' : c);
  return prefix + "_";
}

class PluginRegistry : public sdk::MetricRegistry {
 public:
  PluginRegistry(Metrics& metrics, std::string plugin)
      : metrics_(metrics), plugin_(std::move(plugin)), prefix_(pluginPrefix(plugin_)) {}

  std::shared_ptr<sdk::Counter> counter(const std::string& name, const std::string& help,
                                        const sdk::MetricLabels& labels) override {
    checkName(name, true);
    auto s = metrics_.series(name, "counter", help, labels,
                             [] { return std::make_shared<CounterSeries>(); });
    return typed<CounterSeries>(s, name);
  }
  std::shared_ptr<sdk::Gauge> gauge(const std::string& name, const std::string& help,
                                    const sdk::MetricLabels& labels) override {
    checkName(name, false);
    auto s = metrics_.series(name, "gauge", help, labels,
                             [] { return std::make_shared<GaugeSeries>(); });
    return typed<GaugeSeries>(s, name);
  }
  std::shared_ptr<sdk::Histogram> histogram(const std::string& name, const std::string& help,
                                            std::vector<double> buckets,
                                            const sdk::MetricLabels& labels) override {
    checkName(name, false);
    if (labels.count("le")) throw std::invalid_argument("metric " + name + ": 'le' is reserved");
    if (buckets.empty()) throw std::invalid_argument("histogram " + name + " needs buckets");
    for (std::size_t i = 0; i < buckets.size(); ++i) {
      if (!std::isfinite(buckets[i]) || (i > 0 && buckets[i] <= buckets[i - 1])) {
        throw std::invalid_argument("histogram " + name + ": buckets must increase");
      }
    }
    auto s = metrics_.series(name, "histogram", help, labels,
                             [&] { return std::make_shared<HistogramSeries>(std::move(buckets)); });
    return typed<HistogramSeries>(s, name);
  }
  void gaugeFunction(const std::string& name, const std::string& help, std::function<double()> read,
                     const sdk::MetricLabels& labels) override {
    checkName(name, false);
    addFunction(name, "gauge", help, std::move(read), labels);
  }
  void counterFunction(const std::string& name, const std::string& help,
                       std::function<double()> read, const sdk::MetricLabels& labels) override {
    checkName(name, true);
    addFunction(name, "counter", help, std::move(read), labels);
  }

 private:
  void checkName(const std::string& name, bool counter) const {
    if (!validMetricName(name) || name.rfind(prefix_, 0) != 0 || name.size() == prefix_.size()) {
      throw std::invalid_argument("plugin '" + plugin_ + "' may register only metrics named " +
                                  prefix_ + "..., not '" + name + "'");
    }
    const std::string total = "_total";
    const bool ends_total = name.size() > total.size() &&
                            name.compare(name.size() - total.size(), total.size(), total) == 0;
    if (counter != ends_total) {
      throw std::invalid_argument("metric " + name + ": a counter's name, and only a counter's, " +
                                  "ends in _total");
    }
  }
  template <typename T>
  static std::shared_ptr<T> typed(const std::shared_ptr<Metrics::Series>& s,
                                  const std::string& name) {
    auto t = std::dynamic_pointer_cast<T>(s);
    if (!t) throw std::invalid_argument("metric " + name + " is already registered as a reading");
    return t;
  }
  void addFunction(const std::string& name, const char* type, const std::string& help,
                   std::function<double()> read, const sdk::MetricLabels& labels) {
    if (!read) throw std::invalid_argument("metric " + name + ": no reading function");
    bool made = false;
    metrics_.series(name, type, help, labels, [&] {
      made = true;
      return std::make_shared<FunctionSeries>(std::move(read));
    });
    if (!made) throw std::invalid_argument("metric " + name + " is already registered");
  }

  Metrics& metrics_;
  const std::string plugin_;
  const std::string prefix_;
};

}  // namespace

std::unique_ptr<sdk::MetricRegistry> Metrics::registryFor(const std::string& plugin) {
  return std::make_unique<PluginRegistry>(*this, plugin);
}

std::shared_ptr<Metrics::Series> Metrics::series(
    const std::string& name, const std::string& type, const std::string& help,
    const sdk::MetricLabels& labels, const std::function<std::shared_ptr<Series>()>& make) {
  std::string rendered;
  for (auto& [key, value] : labels) {
    if (!validLabelName(key)) {
      throw std::invalid_argument("metric " + name + ": bad label name '" + key + "'");
    }
    if (!rendered.empty()) rendered += ",";
    rendered += key + "=\"" + escapeLabel(value) + "\"";
  }
  if (help.find('\n') != std::string::npos) {
    throw std::invalid_argument("metric " + name + ": help is one line");
  }
  std::lock_guard lock(mutex_);
  if (gauges_.count(name) || name == "svc_http_requests_total" ||
      name == "svc_http_request_duration_seconds") {
    throw std::invalid_argument("metric " + name + " is the kernel's");
  }
  auto [it, added] = families_.try_emplace(name);
  Family& family = it->second;
  if (added) {
    family.type = type;
    family.help = help;
  } else if (family.type != type || family.help != help) {
    throw std::invalid_argument("metric " + name + " is already registered as a " + family.type +
                                " with other help");
  }
  auto& slot = family.series[rendered];
  if (!slot) slot = make();
  return slot;
}

ProcessFigures readProcessFigures() {
  ProcessFigures f;
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));
  std::ifstream stat("/proc/self/stat");
  std::string line;
  if (std::getline(stat, line)) {
    // The command name (field 2) is in parentheses and may hold spaces: count from the last ')'.
    const auto close = line.rfind(')');
    if (close != std::string::npos) {
      std::istringstream rest(line.substr(close + 2));
      std::vector<std::string> fields;  // fields[0] is field 3 (state)
      for (std::string field; rest >> field;) fields.push_back(field);
      if (fields.size() > 21 && ticks > 0) {
        f.cpu_seconds = (std::stod(fields[11]) + std::stod(fields[12])) / ticks;  // 14, 15
        const double started_ticks = std::stod(fields[19]);                       // 22
        f.virtual_bytes = std::stod(fields[20]);                                  // 23
        f.resident_bytes = std::stod(fields[21]) * page;                          // 24
        std::ifstream system_stat("/proc/stat");
        for (std::string l; std::getline(system_stat, l);) {
          if (l.rfind("btime ", 0) == 0) {
            f.start_time_seconds = std::stod(l.substr(6)) + started_ticks / ticks;
            break;
          }
        }
        f.ok = true;
      }
    }
  }
  if (DIR* dir = ::opendir("/proc/self/fd")) {
    double n = 0;
    while (const dirent* entry = ::readdir(dir)) {
      if (entry->d_name[0] != '.') ++n;
    }
    ::closedir(dir);
    f.open_fds = n - 1;  // not the descriptor this count itself holds open
  }
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    f.max_fds = limit.rlim_cur == RLIM_INFINITY ? std::numeric_limits<double>::infinity()
                                                : static_cast<double>(limit.rlim_cur);
  }
  return f;
}

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
  std::unique_lock lock(mutex_);
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
  // Plugins' readings may take a moment (a count in the database): read outside the lock.
  std::vector<std::pair<std::string, Family>> families(families_.begin(), families_.end());
  lock.unlock();
  for (auto& [name, family] : families) {
    out << "# HELP " << name << " " << family.help << "\n# TYPE " << name << " " << family.type
        << "\n";
    for (auto& [labels, series] : family.series) series->render(out, name, labels);
  }
  const ProcessFigures p = readProcessFigures();
  auto figure = [&out](const char* name, const char* type, const char* help, double v) {
    out << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n"
        << name << " " << number(v) << "\n";
  };
  if (p.ok) {
    figure("process_cpu_seconds_total", "counter", "Total user and system CPU time in seconds.",
           p.cpu_seconds);
    figure("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
           p.resident_bytes);
    figure("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.",
           p.virtual_bytes);
    figure("process_start_time_seconds", "gauge",
           "Start time of the process since the epoch in seconds.", p.start_time_seconds);
  }
  figure("process_open_fds", "gauge", "Number of open file descriptors.", p.open_fds);
  figure("process_max_fds", "gauge", "Maximum number of open file descriptors.", p.max_fds);
  return out.str();
}

}  // namespace svc::kernel
