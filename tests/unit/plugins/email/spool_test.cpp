// The SMTP spool: appends are durable and filed in order, a restart files from the recorded
// position (nothing twice, nothing lost), and a torn tail is never filed.
#include "spool.h"

#include <Poco/File.h>
#include <Poco/TemporaryFile.h>

#include <gtest/gtest.h>

#include <fstream>
#include <mutex>
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

}  // namespace
}  // namespace svc::plugins::email
