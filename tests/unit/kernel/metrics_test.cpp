// /metrics: plugins' own series beside the kernel's, and the process_* figures.
#include "metrics.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <thread>
#include <vector>

namespace svc::kernel {
namespace {

bool has(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

TEST(PluginMetrics, CountersGaugesAndHistogramsRenderWithTheirTypesAndLabels) {
  Metrics metrics;
  auto registry = metrics.registryFor("notes");
  auto made = registry->counter("svc_notes_made_total", "notes made", {{"kind", "text"}});
  auto open = registry->gauge("svc_notes_open", "notes open");
  auto size = registry->histogram("svc_notes_size_bytes", "note sizes", {10, 100});
  made->increment();
  made->increment(2);
  made->increment(-5);  // a counter never goes down
  open->set(7);
  open->add(-2);
  for (double v : {5.0, 50.0, 60.0, 1000.0}) size->observe(v);
  const std::string text = metrics.render();
  EXPECT_TRUE(has(text,
                  "# HELP svc_notes_made_total notes made\n"
                  "# TYPE svc_notes_made_total counter\n"
                  "svc_notes_made_total{kind=\"text\"} 3\n"))
      << text;
  EXPECT_TRUE(has(text, "# TYPE svc_notes_open gauge\nsvc_notes_open 5\n")) << text;
  EXPECT_TRUE(has(text,
                  "# TYPE svc_notes_size_bytes histogram\n"
                  "svc_notes_size_bytes_bucket{le=\"10\"} 1\n"
                  "svc_notes_size_bytes_bucket{le=\"100\"} 3\n"
                  "svc_notes_size_bytes_bucket{le=\"+Inf\"} 4\n"
                  "svc_notes_size_bytes_sum 1115\n"
                  "svc_notes_size_bytes_count 4\n"))
      << text;
}

TEST(PluginMetrics, OneFamilyHoldsASeriesPerLabelSetAndTheSameSeriesIsFoundAgain) {
  Metrics metrics;
  auto registry = metrics.registryFor("notes");
  auto a = registry->counter("svc_notes_sync_total", "syncs", {{"outcome", "ok"}});
  auto b = registry->counter("svc_notes_sync_total", "syncs", {{"outcome", "failed"}});
  auto again = registry->counter("svc_notes_sync_total", "syncs", {{"outcome", "ok"}});
  EXPECT_EQ(a.get(), again.get());
  EXPECT_NE(a.get(), b.get());
  a->increment();
  again->increment();
  b->increment();
  const std::string text = metrics.render();
  EXPECT_EQ(text.find("# TYPE svc_notes_sync_total"), text.rfind("# TYPE svc_notes_sync_total"));
  EXPECT_TRUE(has(text, "svc_notes_sync_total{outcome=\"ok\"} 2\n")) << text;
  EXPECT_TRUE(has(text, "svc_notes_sync_total{outcome=\"failed\"} 1\n")) << text;
}

TEST(PluginMetrics, ReadingsAreTakenAtScrapeTimeAndOneThatThrowsIsLeftOut) {
  Metrics metrics;
  auto registry = metrics.registryFor("notes");
  double queue = 1;
  registry->gaugeFunction("svc_notes_queue", "queued", [&] { return queue; });
  registry->counterFunction("svc_notes_seen_total", "seen", [] { return 42.0; });
  registry->gaugeFunction("svc_notes_broken", "cannot read",
                          []() -> double { throw std::runtime_error("database away"); });
  EXPECT_TRUE(has(metrics.render(), "svc_notes_queue 1\n"));
  queue = 9;
  const std::string text = metrics.render();
  EXPECT_TRUE(has(text, "svc_notes_queue 9\n")) << text;
  EXPECT_TRUE(has(text, "# TYPE svc_notes_seen_total counter\nsvc_notes_seen_total 42\n"));
  EXPECT_TRUE(has(text, "# TYPE svc_notes_broken gauge\n# HELP")) << text;  // no sample line
  EXPECT_THROW(registry->gaugeFunction("svc_notes_queue", "queued", [] { return 0.0; }),
               std::invalid_argument);
}

TEST(PluginMetrics, RefusesForeignMalformedAndClashingNames) {
  Metrics metrics;
  metrics.gauge("svc_db_pool_used", "kernel's", [] { return 1.0; });
  auto notes = metrics.registryFor("notes");
  auto db = metrics.registryFor("db");
  EXPECT_THROW(notes->counter("svc_email_sent_total", ""), std::invalid_argument);  // another's
  EXPECT_THROW(notes->counter("notes_total", ""), std::invalid_argument);           // no prefix
  EXPECT_THROW(notes->counter("svc_notes_", ""), std::invalid_argument);
  EXPECT_THROW(notes->counter("svc_notes_made", ""), std::invalid_argument);  // no _total
  EXPECT_THROW(notes->gauge("svc_notes_open_total", ""), std::invalid_argument);
  EXPECT_THROW(notes->gauge("svc_notes_bad-name", ""), std::invalid_argument);
  EXPECT_THROW(notes->gauge("svc_notes_x", "", {{"bad-label", "v"}}), std::invalid_argument);
  EXPECT_THROW(notes->gauge("svc_notes_x", "", {{"__reserved", "v"}}), std::invalid_argument);
  EXPECT_THROW(notes->histogram("svc_notes_h", "", {1, 1}), std::invalid_argument);
  EXPECT_THROW(notes->histogram("svc_notes_h", "", {}), std::invalid_argument);
  EXPECT_THROW(notes->histogram("svc_notes_h", "", {1}, {{"le", "1"}}), std::invalid_argument);
  EXPECT_THROW(db->gauge("svc_db_pool_used", ""), std::invalid_argument);  // the kernel's
  EXPECT_THROW(metrics.registryFor("http")->counter("svc_http_requests_total", ""),
               std::invalid_argument);
  notes->gauge("svc_notes_open", "open");
  EXPECT_THROW(notes->counter("svc_notes_open", "open"), std::invalid_argument);
  EXPECT_THROW(notes->gauge("svc_notes_open", "other help"), std::invalid_argument);
  // A plugin's name with a dash or dot becomes an underscore in its prefix.
  EXPECT_NO_THROW(metrics.registryFor("my-notes.v2")->gauge("svc_my_notes_v2_open", ""));
}

TEST(PluginMetrics, LabelValuesAreEscaped) {
  Metrics metrics;
  metrics.registryFor("notes")->gauge("svc_notes_g", "", {{"path", "a\"b\\c\nd"}})->set(1);
  EXPECT_TRUE(has(metrics.render(), "svc_notes_g{path=\"a\\\"b\\\\c\\nd\"} 1\n"));
}

TEST(PluginMetrics, UpdatesFromManyThreadsAddUp) {
  Metrics metrics;
  auto registry = metrics.registryFor("notes");
  auto c = registry->counter("svc_notes_n_total", "");
  auto h = registry->histogram("svc_notes_h", "", {0.5});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c->increment();
        h->observe(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c->value(), 40000);
  EXPECT_TRUE(has(metrics.render(), "svc_notes_h_sum 40000\n"));
}

TEST(ProcessMetrics, FiguresFromProcSelfAreSane) {
  const ProcessFigures f = readProcessFigures();
  ASSERT_TRUE(f.ok);
  EXPECT_GT(f.resident_bytes, 1e5);
  EXPECT_GE(f.virtual_bytes, f.resident_bytes);
  EXPECT_GE(f.open_fds, 3);
  EXPECT_GE(f.max_fds, f.open_fds);
  EXPECT_GE(f.cpu_seconds, 0);
  const double now = static_cast<double>(::time(nullptr));
  EXPECT_LE(f.start_time_seconds, now + 1);
  EXPECT_GT(f.start_time_seconds, now - 3600);
  // Opening a descriptor shows.
  const int fd = ::dup(0);
  EXPECT_EQ(readProcessFigures().open_fds, f.open_fds + 1);
  ::close(fd);
  const std::string text = Metrics().render();
  for (const char* name :
       {"process_resident_memory_bytes", "process_open_fds", "process_cpu_seconds_total",
        "process_start_time_seconds", "process_max_fds"}) {
    EXPECT_TRUE(has(text, std::string("\n") + name + " ")) << name;
  }
}

}  // namespace
}  // namespace svc::kernel
