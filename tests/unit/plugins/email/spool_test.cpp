// The SMTP spool: appends are durable and filed in order, a restart files from the recorded
// position (nothing twice, nothing lost), and a torn tail is never filed.
#include "spool.h"

#include "data_dirs.h"

#include <Poco/File.h>
#include <Poco/TemporaryFile.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace svc::plugins::email {
namespace {

struct Filed {
  std::mutex mutex;
  std::vector<std::string> payloads;
  Spool::Position at;
  Spool::Filer filer() {
    return [this](const std::vector<Spool::Record>& records, const Spool::Position& end) {
      std::lock_guard lock(mutex);
      for (const auto& r : records) payloads.push_back(r.payload);
      at = end;
    };
  }
};

TEST(Spool, FilesInOrderAndResumesFromTheRecordedPosition) {
  const std::string dir = Poco::TemporaryFile::tempName("/tmp/") + "-spool";
  Filed first;
  Spool::Position last;
  {
    Spool spool(dir, first.filer());
    spool.start({});
    for (int i = 0; i < 50; ++i) last = spool.append("message " + std::to_string(i));
    ASSERT_TRUE(spool.waitFiled(last, 5000));
    EXPECT_EQ(spool.backlog(), 0u);
    EXPECT_THROW(Spool(dir, first.filer()), std::runtime_error) << "one process per spool";
  }
  ASSERT_EQ(first.payloads.size(), 50u);
  EXPECT_EQ(first.payloads[49], "message 49");

  // A crash mid-append leaves a torn record at the end of the segment.
  {
    std::ofstream tail(dir + "/segment-" + std::to_string(last.segment),
                       std::ios::binary | std::ios::app);
    tail << Spool::frame("torn message").substr(0, 10);
  }
  // Restarted from where the database says filing stopped: nothing again, new mail goes on.
  Filed second;
  {
    Spool spool(dir, second.filer());
    spool.start(first.at);
    auto p = spool.append("after restart");
    ASSERT_TRUE(spool.waitFiled(p, 5000));
  }
  ASSERT_EQ(second.payloads.size(), 1u);
  EXPECT_EQ(second.payloads[0], "after restart");

  // Restarted as if the database had recorded nothing: the first segment was removed once it
  // was filed, so what is left (the second run's record) is filed once, and never the torn one.
  Filed third;
  {
    Spool spool(dir, third.filer());
    spool.start({});
    for (int i = 0; i < 100; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      std::lock_guard lock(third.mutex);
      if (!third.payloads.empty()) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(third.payloads, std::vector<std::string>{"after restart"});
  Poco::File(dir).remove(true);
}

// The backlog (what the plugin bounds) counts records and payload bytes appended and not yet
// filed, and falls back to nothing once the ingester has filed them.
TEST(Spool, BacklogCountsWhatIsNotYetFiled) {
  const std::string dir = Poco::TemporaryFile::tempName("/tmp/") + "-spool";
  std::mutex gate;
  std::unique_lock held(gate);  // the filer waits here: nothing is filed yet
  Filed filed;
  {
    Spool spool(dir, [&](const std::vector<Spool::Record>& records, const Spool::Position& end) {
      std::lock_guard open(gate);
      filed.filer()(records, end);
    });
    spool.start({});
    Spool::Position last;
    for (const char* m : {"one", "three", "eleven body"}) last = spool.append(m);
    EXPECT_EQ(spool.backlog(), 3u);
    EXPECT_EQ(spool.backlogBytes(), 3u + 5u + 11u);
    held.unlock();
    ASSERT_TRUE(spool.waitFiled(last, 5000));
    EXPECT_EQ(spool.backlog(), 0u);
    EXPECT_EQ(spool.backlogBytes(), 0u);
  }
  EXPECT_EQ(filed.payloads.size(), 3u);
  Poco::File(dir).remove(true);
}

// Under a burst filing waits for a lull (its commits would share the disk with the appends'
// fdatasync), unless a session waits for its message to be filed, the backlog passes its bound
// or the oldest record has waited max_filing_lag; once the burst ends, everything is filed.
// The gaps are generous and the waits deadlines: on a loaded machine an append takes long, and
// the filer (the lowest priority) runs late.
bool within(std::chrono::seconds limit, const std::function<bool()>& done) {
  for (const auto until = std::chrono::steady_clock::now() + limit;
       std::chrono::steady_clock::now() < until;) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}

TEST(Spool, FilingWaitsOutABurstWithinItsBounds) {
  const std::string dir = Poco::TemporaryFile::tempName("/tmp/") + "-spool";
  Filed filed;
  Spool::Options options;
  options.defer_below_bytes = 1 << 20;
  options.burst_gap = std::chrono::milliseconds(1000);
  options.max_filing_lag = std::chrono::milliseconds(60000);
  {
    Spool spool(dir, filed.filer(), options);
    spool.start({});
    Spool::Position last;
    for (int i = 0; i < 20; ++i) last = spool.append("burst " + std::to_string(i));
    EXPECT_GT(spool.backlog(), 0u) << "filed while the appends went on";
    // A session waiting for its message ends the wait at once.
    ASSERT_TRUE(spool.waitFiled(last, 20000));
    EXPECT_EQ(spool.backlog(), 0u);
    // Past the bound, filing goes on under the burst.
    const std::string big(600 << 10, 'b');
    last = spool.append(big);
    last = spool.append(big);
    EXPECT_TRUE(within(std::chrono::seconds(20), [&] {
      spool.append("small");
      return spool.backlogBytes() < options.defer_below_bytes;
    }));
    ASSERT_TRUE(spool.waitFiled(last, 20000));
    // The lull: the rest is filed without anyone waiting.
    spool.append("last");
    EXPECT_TRUE(within(std::chrono::seconds(20), [&] { return spool.backlog() == 0; }));
  }
  Poco::File(dir).remove(true);

  // A burst that never ends: what waited max_filing_lag is filed under it, not before.
  Filed steady;
  options.burst_gap = std::chrono::milliseconds(60000);
  options.max_filing_lag = std::chrono::milliseconds(300);
  {
    Spool spool(dir, steady.filer(), options);
    spool.start({});
    const auto began = std::chrono::steady_clock::now();
    EXPECT_TRUE(within(std::chrono::seconds(20), [&] {
      spool.append("steady");
      std::lock_guard lock(steady.mutex);
      return !steady.payloads.empty();
    })) << "filing waited past its lag";
    EXPECT_GE(std::chrono::steady_clock::now() - began, options.max_filing_lag);
  }
  Poco::File(dir).remove(true);
}

// A spool whose filing takes `per_record` a record (burst gap 300 ms, lag 1 s), started with its
// filing rate known: `known` records appended and filed.
struct SlowlyFiled {
  const std::string dir = Poco::TemporaryFile::tempName("/tmp/") + "-spool";
  Filed filed;
  std::atomic<int> written{0};
  Spool::Options options;
  std::unique_ptr<Spool> spool;
  SlowlyFiled(std::chrono::microseconds per_record, int known) {
    options.defer_below_bytes = 1 << 20;
    options.burst_gap = std::chrono::milliseconds(300);
    options.max_filing_lag = std::chrono::milliseconds(1000);
    spool = std::make_unique<Spool>(
        dir,
        [this, per_record](const std::vector<Spool::Record>& records, const Spool::Position& end) {
          std::this_thread::sleep_for(per_record * records.size());
          filed.filer()(records, end);
        },
        options);
    spool->start({});
    Spool::Position last;
    for (int i = 0; i < known; ++i) last = spool->append("known " + std::to_string(i));
    if (!spool->waitFiled(last, 20000)) throw std::runtime_error("the first records not filed");
  }
  ~SlowlyFiled() {
    spool.reset();
    Poco::File(dir).remove(true);
  }
  void append(const char* what) {
    spool->appendAsync(what, [this](const Spool::Position&, const std::string&) { ++written; });
  }
  std::size_t count() {
    std::lock_guard lock(filed.mutex);
    return filed.payloads.size();
  }
};

// A flood (mail faster than filing goes, and more waiting than filing does in the lag) is filed
// one batch a lag under the burst, where filing all along would take CPU from the
// acknowledgements and the lag would grow all the same; the rest is filed in the lull.
TEST(Spool, AFloodIsFiledABatchALagThenInTheLull) {
  SlowlyFiled s(std::chrono::milliseconds(2), 20);  // at most 500 records a second
  const std::size_t before = s.count();
  // 1,000 records a second for 2.4 s: the first batch (256 records) goes a lag after the flood
  // began and is filed by ~1.5 s, the next not before ~2.5 s. Filing all along would file
  // ~1,000 in the burst.
  const auto began = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() < began + std::chrono::milliseconds(2400)) {
    for (int i = 0; i < 100; ++i) s.append("flood");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const std::size_t under_burst = s.count() - before;
  EXPECT_GE(under_burst, 1u) << "nothing filed under the flood";
  EXPECT_LE(under_burst, 256u) << "filed all along under the flood";
  EXPECT_TRUE(within(std::chrono::seconds(60), [&] { return s.spool->backlog() == 0; }));
}

// A spike in steady mail that filing keeps up with is no flood: once the spike has passed,
// filing goes on under the stream (a lag at a time) and catches up; an agent's code is not
// left behind it at a batch a lag.
TEST(Spool, ASpikeInSteadyMailIsCaughtUpUnderTheStream) {
  SlowlyFiled s(std::chrono::microseconds(500), 100);  // at most 2,000 records a second
  // A spike of 3,000 (more than filing does in the lag), then 400 a second for 5.5 s: caught up
  // within ~4.5 s, then what a lag brings (~400) waits at most. A batch a lag (256) would leave
  // thousands.
  for (int i = 0; i < 3000; ++i) s.append("spike");
  const auto began = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() < began + std::chrono::milliseconds(5500)) {
    for (int i = 0; i < 40; ++i) s.append("steady");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_LT(s.spool->backlog(), 1000u) << "the stream was taken for a flood";
}

// appendAsync returns at once; the writer thread says when each record is on disk, once, in the
// order they were queued, and the bytes are in the segment when it says so.
TEST(Spool, AsynchronousAppendsAreAnsweredOnceTheyAreOnDisk) {
  const std::string dir = Poco::TemporaryFile::tempName("/tmp/") + "-spool";
  Filed filed;
  Spool spool(dir, filed.filer());
  std::string refused;
  spool.appendAsync("early", [&](const Spool::Position&, const std::string& e) { refused = e; });
  EXPECT_EQ(refused, "the spool is not running");
  spool.start({});
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<Spool::Position> ends;
  std::vector<bool> on_disk;
  const int n = 200;
  for (int i = 0; i < n; ++i) {
    spool.appendAsync(
        "record " + std::to_string(i), [&](const Spool::Position& end, const std::string& error) {
          EXPECT_EQ(error, "");
          const std::string path = dir + "/segment-" + std::to_string(end.segment);
          std::lock_guard lock(mutex);
          on_disk.push_back(static_cast<std::int64_t>(Poco::File(path).getSize()) >= end.offset);
          ends.push_back(end);
          cv.notify_all();
        });
  }
  {
    std::unique_lock lock(mutex);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return ends.size() == n; }));
  }
  EXPECT_EQ(std::count(on_disk.begin(), on_disk.end(), true), n);
  for (int i = 1; i < n; ++i) EXPECT_LT(ends[i - 1].offset, ends[i].offset);
  ASSERT_TRUE(spool.waitFiled(ends.back(), 5000));
  spool.stop();
  ASSERT_EQ(filed.payloads.size(), static_cast<std::size_t>(n));
  EXPECT_EQ(filed.payloads[n - 1], "record " + std::to_string(n - 1));
  Poco::File(dir).remove(true);
}

// Segments are zero-filled ahead of use: once the current one has taken prepare_after bytes, the
// next is written full of zeros in the background, and the writer moves to it. The zeros after
// the last record end a segment: on a restart every record is filed once, and nothing else.
TEST(Spool, ZeroFilledSegmentsEndAtTheirLastRecord) {
  const std::string dir = Poco::TemporaryFile::tempName("/tmp/") + "-spool";
  const Spool::Options small{64 << 10, 1 << 10};
  std::vector<std::string> sent;
  {
    // Nothing is filed in this run (the filer refuses, as a database that is down would).
    Spool spool(
        dir, [](const auto&, const auto&) { throw std::runtime_error("database down"); }, small);
    spool.start({});
    EXPECT_THROW(spool.append(""), std::invalid_argument) << "a zero length ends a segment";
    Spool::Position first, last;
    for (int i = 0; i < 2000 && last.segment == first.segment; ++i) {
      sent.push_back("message " + std::to_string(i) + std::string(100, 'x'));
      last = spool.append(sent.back());
      if (i == 0) first = last;
      if (last.segment == first.segment) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_EQ(last.segment, first.segment + 1) << "the writer moved to the zero-filled spare";
    for (int i = 0; i < 5; ++i) sent.push_back("in the spare " + std::to_string(i));
    for (std::size_t i = sent.size() - 5; i < sent.size(); ++i) last = spool.append(sent[i]);
    EXPECT_EQ(Poco::File(dir + "/segment-" + std::to_string(last.segment)).getSize(), 64u << 10)
        << "the segment holds its records and then zeros";
    EXPECT_LT(last.offset, 4 << 10);
  }
  // Restarted as if the database had recorded nothing: both segments are filed, in order, each
  // record once; the zeros are not read as empty records. New mail goes on after them.
  Filed filed;
  {
    Spool spool(dir, filed.filer(), small);
    spool.start({});
    sent.push_back("after restart");
    auto p = spool.append(sent.back());
    ASSERT_TRUE(spool.waitFiled(p, 5000));
  }
  EXPECT_EQ(filed.payloads, sent);
  Poco::File(dir).remove(true);
}

// Older svcd kept the spool at data.dir/email/email/spool. An upgrade moves it, with the mail
// it acknowledged and never filed, to data.dir/email/spool, and files that mail from there.
TEST(Spool, ASpoolLeftAtTheOldPathIsAdoptedWithItsUnfiledMail) {
  const std::string root = Poco::TemporaryFile::tempName("/tmp/") + "-data";
  const std::string legacy = root + "/email/email/spool", current = root + "/email/spool";
  std::vector<std::string> sent;
  {
    Spool spool(legacy, [](const auto&, const auto&) { throw std::runtime_error("down"); });
    spool.start({});
    for (int i = 0; i < 3; ++i) {
      sent.push_back("acknowledged before the upgrade " + std::to_string(i));
      spool.append(sent.back());
    }
    EXPECT_THROW(adoptLegacyDirectory(legacy, current, "lock"), std::runtime_error)
        << "a spool in use by a running svcd stays where it is";
  }
  EXPECT_FALSE(adoptLegacyDirectory(root + "/nothing", current, "lock"));
  ASSERT_TRUE(adoptLegacyDirectory(legacy, current, "lock"));
  EXPECT_FALSE(Poco::File(legacy).exists());
  Filed filed;
  {
    Spool spool(current, filed.filer());
    spool.start({});
    sent.push_back("after the upgrade");
    ASSERT_TRUE(spool.waitFiled(spool.append(sent.back()), 5000));
  }
  EXPECT_EQ(filed.payloads, sent);

  // Both paths at once (an older svcd ran again after the upgrade): neither is chosen.
  Poco::File(legacy).createDirectories();
  EXPECT_THROW(adoptLegacyDirectory(legacy, current, "lock"), std::runtime_error);
  EXPECT_TRUE(Poco::File(legacy).exists());
  EXPECT_TRUE(Poco::File(current + "/id").exists());
  Poco::File(root).remove(true);
}

}  // namespace
}  // namespace svc::plugins::email
