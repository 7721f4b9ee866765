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
    ASSERT_TRUE(spool.waitFiled(last, 30000));
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
    ASSERT_TRUE(spool.waitFiled(p, 30000));
  }
  ASSERT_EQ(second.payloads.size(), 1u);
  EXPECT_EQ(second.payloads[0], "after restart");

  // Restarted as if the database had recorded nothing: the first segment was removed once it
  // was filed, so what is left (the second run's record) is filed once, and never the torn one.
  Filed third;
  {
    Spool spool(dir, third.filer());
    spool.start({});
    // Filed once: a record appended now is filed after what the restart found, and nothing
    // else before it.
    ASSERT_TRUE(spool.waitFiled(spool.append("after the second restart"), 30000));
  }
  EXPECT_EQ(third.payloads,
            (std::vector<std::string>{"after restart", "after the second restart"}));
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
    ASSERT_TRUE(spool.waitFiled(last, 30000));
    EXPECT_EQ(spool.backlog(), 0u);
    EXPECT_EQ(spool.backlogBytes(), 0u);
  }
  EXPECT_EQ(filed.payloads.size(), 3u);
  Poco::File(dir).remove(true);
}

// The spool's steady clock (Options::now), moved by the test alone: a burst, a lull and a lag
// are what the test says they are, however long the machine takes to append and to file. It
// counts the ingester's reads (once the test knows its thread), so a test can wait until the
// ingester has looked at the time it set.
struct ManualClock {
  std::atomic<std::int64_t> us{1'000'000'000};
  std::atomic<std::thread::id> ingester{};
  std::atomic<std::uint64_t> ingester_reads{0};
  std::function<std::int64_t()> now() {
    return [this] {
      if (std::this_thread::get_id() == ingester.load()) ++ingester_reads;
      return us.load();
    };
  }
  void advance(std::chrono::microseconds by) { us += by.count(); }
};

// Under a burst filing waits for a lull (its commits would share the disk with the appends'
// fdatasync), unless a session waits for its message to be filed, the backlog passes its bound
// or the oldest record has waited max_filing_lag; once the burst ends, everything is filed.
// The spool's clock is the test's: the burst lasts until the test moves it. The waits are
// deadlines: on a loaded machine an append takes long, and the filer (the lowest priority) runs
// late.
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
  ManualClock clock;
  Spool::Options options;
  options.defer_below_bytes = 1 << 20;
  options.burst_gap = std::chrono::milliseconds(20);
  options.max_filing_lag = std::chrono::milliseconds(60000);
  options.now = clock.now();
  {
    Spool spool(dir, filed.filer(), options);
    spool.start({});
    Spool::Position last;
    for (int i = 0; i < 20; ++i) last = spool.append("burst " + std::to_string(i));
    EXPECT_GT(spool.backlog(), 0u) << "filed while the appends went on";
    // A session waiting for its message ends the wait at once.
    ASSERT_TRUE(spool.waitFiled(last, 30000));
    EXPECT_EQ(spool.backlog(), 0u);
    // Past the bound, filing goes on under the burst.
    const std::string big(600 << 10, 'b');
    last = spool.append(big);
    last = spool.append(big);
    EXPECT_TRUE(within(std::chrono::seconds(30), [&] {
      spool.append("small");
      return spool.backlogBytes() < options.defer_below_bytes;
    }));
    ASSERT_TRUE(spool.waitFiled(last, 30000));
    // Under the burst, what is left waits; in the lull it is filed without anyone waiting.
    spool.append("last");
    EXPECT_GT(spool.backlog(), 0u);
    clock.advance(options.burst_gap);
    EXPECT_TRUE(within(std::chrono::seconds(30), [&] { return spool.backlog() == 0; }));
  }
  Poco::File(dir).remove(true);

  // A burst that never ends: what waited max_filing_lag is filed under it, not before.
  options.burst_gap = std::chrono::milliseconds(60000);
  options.max_filing_lag = std::chrono::milliseconds(30);
  std::atomic<std::int64_t> filed_at{0};
  {
    Spool spool(
        dir,
        [&](const std::vector<Spool::Record>&, const Spool::Position&) {
          if (filed_at == 0) filed_at = clock.us.load();
        },
        options);
    spool.start({});
    const std::int64_t began = clock.us;
    EXPECT_TRUE(within(std::chrono::seconds(30), [&] {
      spool.append("steady");
      clock.advance(std::chrono::milliseconds(5));
      return filed_at != 0;
    })) << "filing waited past its lag";
    EXPECT_GE(filed_at - began, std::chrono::microseconds(options.max_filing_lag).count());
  }
  Poco::File(dir).remove(true);
}

// A spool whose filing takes `per_record` a record on its clock (burst gap 20 ms, lag 100 ms),
// started with its filing rate known: `known` records appended and filed (the filer moves the
// clock itself meanwhile). Then the test moves the clock a step at a time, appending what arrived
// meanwhile, while a batch being filed waits for the clock to reach its end; after each step the
// test waits for the ingester to have read the new time (or to be filing), so the ingester sees
// the time pass as the test says, however slowly it runs.
struct SlowlyFiled {
  const std::string dir = Poco::TemporaryFile::tempName("/tmp/") + "-spool";
  Filed filed;
  ManualClock clock;
  std::atomic<bool> stepping{false};          // the test moves the clock
  std::atomic<std::int64_t> filing_until{0};  // a batch being filed ends then (0: none)
  std::atomic<std::uint64_t> written{0};
  std::uint64_t appended = 0;
  Spool::Options options;
  std::unique_ptr<Spool> spool;
  SlowlyFiled(std::chrono::microseconds per_record, int known) {
    options.defer_below_bytes = 1 << 20;
    options.burst_gap = std::chrono::milliseconds(20);
    options.max_filing_lag = std::chrono::milliseconds(100);
    options.now = clock.now();
    spool = std::make_unique<Spool>(
        dir,
        [this, per_record](const std::vector<Spool::Record>& records, const Spool::Position& end) {
          clock.ingester = std::this_thread::get_id();  // the filer runs on the ingester thread
          const std::int64_t takes = (per_record * records.size()).count();
          if (!stepping) {
            clock.advance(std::chrono::microseconds(takes));
          } else {
            filing_until = clock.us + takes;
            while (stepping && clock.us < filing_until) {
              std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
            filing_until = 0;
          }
          filed.filer()(records, end);
        },
        options);
    spool->start({});
    Spool::Position last;
    for (int i = 0; i < known; ++i) last = spool->append("known " + std::to_string(i));
    if (!spool->waitFiled(last, 30000)) throw std::runtime_error("the first records not filed");
    stepping = true;
  }
  ~SlowlyFiled() {
    stepping = false;  // a batch being filed does not wait for the clock any more
    spool.reset();
    Poco::File(dir).remove(true);
  }
  /// Appends n records and waits until they are on disk.
  void append(int n) {
    for (int i = 0; i < n; ++i) {
      spool->appendAsync("mail", [this](const Spool::Position&, const std::string&) { ++written; });
    }
    appended += static_cast<std::uint64_t>(n);
    if (!within(std::chrono::seconds(30), [&] { return written == appended; })) {
      throw std::runtime_error("appends not written");
    }
  }
  /// Moves the clock on, then waits (within bounds) until the ingester has read it twice (it has
  /// decided what to do at the new time), is filing a batch that ends later, or has nothing to
  /// file.
  void step(std::chrono::microseconds by) {
    const std::uint64_t reads = clock.ingester_reads;
    clock.advance(by);
    within(std::chrono::seconds(30), [&] {
      const std::int64_t until = filing_until;
      return clock.ingester_reads >= reads + 2 || (until != 0 && clock.us < until) ||
             spool->backlog() == 0;
    });
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
  SlowlyFiled s(std::chrono::microseconds(200), 20);  // at most 5,000 records a second
  const std::size_t before = s.count();
  const auto step = std::chrono::milliseconds(10);
  const std::int64_t lag = std::chrono::microseconds(s.options.max_filing_lag).count();
  // 10,000 records a second until the first batch (256 records, 51 ms of filing, the flood
  // going on meanwhile) is filed a lag after the flood began.
  const std::int64_t began = s.clock.us;
  while (s.count() == before && s.clock.us - began < 20 * lag) {
    s.append(100);
    s.step(step);
  }
  ASSERT_GT(s.count(), before) << "nothing filed under the flood";
  EXPECT_GE(s.clock.us - began, lag) << "filed before the lag";
  // The flood goes on for most of a lag more (the first batch was filed at most a step before
  // it was seen): filing all along would file the next batch within it, a batch a lag does not.
  const std::int64_t seen = s.clock.us;
  while (s.clock.us + step.count() * 1000 < seen + lag - 2 * step.count() * 1000) {
    s.append(100);
    s.step(step);
  }
  EXPECT_LE(s.count() - before, 256u) << "filed all along under the flood";
  // The lull: the rest is filed.
  EXPECT_TRUE(within(std::chrono::seconds(60), [&] {
    s.clock.advance(step);
    return s.spool->backlog() == 0;
  }));
}

// A spike in steady mail that filing keeps up with is no flood: once the spike has passed,
// filing goes on under the stream (a lag at a time) and catches up; an agent's code is not
// left behind it at a batch a lag.
TEST(Spool, ASpikeInSteadyMailIsCaughtUpUnderTheStream) {
  SlowlyFiled s(std::chrono::microseconds(50), 100);  // at most 20,000 records a second
  // A spike of 3,000 (more than filing does in the lag), then 4,000 a second for 550 ms (the
  // clock's): caught up within ~200 ms, then what a lag brings (~400) waits at most. A batch a
  // lag (256) would leave thousands.
  s.append(3000);
  const std::int64_t began = s.clock.us;
  std::uint64_t steady = 0;
  while (s.clock.us - began < 550'000) {
    // What arrived since the last step (filing moves the clock too).
    const auto due = static_cast<std::uint64_t>((s.clock.us - began) * 4000 / 1'000'000);
    s.append(static_cast<int>(due - steady));
    steady = due;
    s.step(std::chrono::milliseconds(5));
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
  ASSERT_TRUE(spool.waitFiled(ends.back(), 30000));
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
    // Past prepare_after the spare is zero-filled in the background (at the lowest priority,
    // however long that takes): wait for it before filling the segment, or the writer would
    // start a segment of its own.
    for (int i = 0; i < 2000 && last.segment == first.segment; ++i) {
      sent.push_back("message " + std::to_string(i) + std::string(100, 'x'));
      last = spool.append(sent.back());
      if (i == 0) first = last;
      if (last.offset > small.prepare_after) {
        ASSERT_TRUE(
            within(std::chrono::seconds(30), [&] { return Poco::File(dir + "/spare").exists(); }));
      }
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
    ASSERT_TRUE(spool.waitFiled(p, 30000));
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
    ASSERT_TRUE(spool.waitFiled(spool.append(sent.back()), 30000));
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
