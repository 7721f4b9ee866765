// The blob stores: attachment bytes as files (SQLite) and as rows (MySQL/MariaDB, where several
// svcd share the database), read in pieces; the upgrade that moves files into the database; and
// a blob streamed as a download. The database store runs on SQLite and, when the run has one, on
// the MariaDB server SVC_TEST_MYSQL_URL names (a database of its own, dropped afterwards).
#include "../../test_database.h"
#include "blob_import.h"
#include "blob_response.h"
#include "database.h"
#include "db_blob_store.h"
#include "file_blob_store.h"
#include "mail_store.h"

#include <svc/sdk/util.h>

#include <Poco/Data/MySQL/Connector.h>
#include <Poco/Environment.h>
#include <Poco/File.h>
#include <Poco/Logger.h>
#include <Poco/TemporaryFile.h>
#include <Poco/URI.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace svc::plugins::email {
namespace {

using svc::test::TempDir;
using svc::test::TestDatabase;

// Bytes no two tests share and that no piece boundary hides: every byte value, NULs included.
std::string bytesOf(std::size_t n, unsigned seed = 1) {
  std::string out(n, '\0');
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<char>((i * 131 + seed * 7 + i / 251));
  return out;
}

std::vector<std::string> pieces(BlobReader& reader) {
  std::vector<std::string> out;
  for (std::string p = reader.next(); !p.empty(); p = reader.next()) out.push_back(p);
  return out;
}

class DbBlobStoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  DbBlobStoreTest() : database_(GetParam(), dir_.path) {
    if (database_.url.empty()) return;
    db_ = std::make_unique<kernel::SqlDatabase>(database_.url, 4, "off");
    store_ = std::make_unique<DbBlobStore>(*db_);
  }
  void SetUp() override {
    if (!db_) GTEST_SKIP() << "SVC_TEST_MYSQL_URL is not set";
    db_->migrate("email", MailStore::migrations());
  }
  long count(const std::string& table) {
    long n = 0;
    Poco::Data::Session s = db_->session();
    s << "SELECT COUNT(*) FROM " + table, Poco::Data::Keywords::into(n), Poco::Data::Keywords::now;
    return n;
  }

  TempDir dir_;
  TestDatabase database_;
  std::unique_ptr<kernel::SqlDatabase> db_;
  std::unique_ptr<DbBlobStore> store_;
};

TEST_P(DbBlobStoreTest, ABlobLargerThanAChunkReadsBackInChunkSizedPieces) {
  const std::string data = bytesOf(3 * kBlobPieceBytes + 17);
  const std::string key = store_->put(data);
  EXPECT_EQ(key, sdk::sha256Hex(data));
  EXPECT_EQ(count("email_blob_chunks"), 4);
  auto reader = store_->open(key);
  ASSERT_TRUE(reader);
  EXPECT_EQ(reader->size(), data.size());
  auto got = pieces(*reader);
  ASSERT_EQ(got.size(), 4u);
  for (const auto& p : got) EXPECT_LE(p.size(), kBlobPieceBytes);
  EXPECT_EQ(got.back().size(), 17u);
  EXPECT_EQ(store_->get(key), data);
}

TEST_P(DbBlobStoreTest, SmallAndEmptyBlobsAndMissingOnes) {
  EXPECT_EQ(store_->get(store_->put("bytes")), "bytes");
  const std::string empty = store_->put("");
  auto reader = store_->open(empty);
  ASSERT_TRUE(reader);
  EXPECT_EQ(reader->size(), 0u);
  EXPECT_EQ(reader->next(), "");
  EXPECT_FALSE(store_->open(sdk::sha256Hex("never stored")));
  EXPECT_FALSE(store_->open("not a key"));
  EXPECT_FALSE(store_->get(std::string(64, 'A')));
}

TEST_P(DbBlobStoreTest, StoringTheSameBytesAgainOrAtOnceKeepsOneCopy) {
  const std::string data = bytesOf(kBlobPieceBytes + 1, 2);
  std::vector<std::thread> writers;
  for (int i = 0; i < 3; ++i) writers.emplace_back([&] { store_->put(data); });
  for (auto& t : writers) t.join();
  store_->put(data);
  EXPECT_EQ(count("email_blobs"), 1);
  EXPECT_EQ(count("email_blob_chunks"), 2);
  EXPECT_EQ(store_->get(sdk::sha256Hex(data)), data);
}

TEST_P(DbBlobStoreTest, ChunksWithoutTheirManifestAreNoBlobAndAreWrittenAgain) {
  // A crash between a blob's chunks and its manifest: absent until stored again, then whole.
  const std::string data = bytesOf(2 * kBlobPieceBytes, 3);
  const std::string key = store_->put(data);
  db_->transaction([&](Poco::Data::Session& tx) {
    tx << "DELETE FROM email_blobs", Poco::Data::Keywords::now;
    tx << "DELETE FROM email_blob_chunks WHERE part = 1", Poco::Data::Keywords::now;
  });
  EXPECT_FALSE(store_->open(key));
  EXPECT_FALSE(store_->has(key));
  EXPECT_EQ(store_->put(data), key);
  EXPECT_EQ(store_->get(key), data);
}

TEST_P(DbBlobStoreTest, AMissingChunkIsAnErrorNotAShortBlob) {
  const std::string key = store_->put(bytesOf(2 * kBlobPieceBytes + 5, 4));
  db_->transaction([&](Poco::Data::Session& tx) {
    tx << "DELETE FROM email_blob_chunks WHERE part = 2", Poco::Data::Keywords::now;
  });
  EXPECT_THROW(store_->get(key), std::runtime_error);
}

TEST_P(DbBlobStoreTest, FilesAnOlderVersionKeptAreMovedInOnceAndBadOnesAreLeft) {
  const std::string dir = dir_.path + "/blobs";
  FileBlobStore files(dir);
  const std::string big = bytesOf(kBlobPieceBytes * 2 + 3, 5);
  const std::string big_key = files.put(big);
  const std::string small_key = files.put("small");
  // A file whose bytes are not what its name says, and a write a crash cut short.
  const std::string bad = dir + "/" + sdk::sha256Hex("x").substr(0, 2);
  Poco::File(bad).createDirectories();
  std::ofstream(bad + "/" + sdk::sha256Hex("x")) << "not x";
  std::ofstream(bad + "/" + sdk::sha256Hex("y") + ".tmp.abc") << "y";

  Poco::Logger& log = Poco::Logger::get("blob-import-test");
  BlobImport done = importBlobFiles(dir, *store_, log);
  EXPECT_EQ(done.imported, 2u);
  EXPECT_EQ(done.kept, 1u);
  EXPECT_EQ(store_->get(big_key), big);
  EXPECT_EQ(store_->get(small_key), "small");
  EXPECT_FALSE(Poco::File(dir + "/" + big_key.substr(0, 2) + "/" + big_key).exists());
  EXPECT_FALSE(Poco::File(bad + "/" + sdk::sha256Hex("y") + ".tmp.abc").exists());
  EXPECT_TRUE(Poco::File(bad + "/" + sdk::sha256Hex("x")).exists()) << "left for the operator";
  EXPECT_FALSE(store_->has(sdk::sha256Hex("x")));

  // Again (the next start, or another svcd): nothing more to do, nothing doubled.
  done = importBlobFiles(dir, *store_, log);
  EXPECT_EQ(done.imported, 0u);
  EXPECT_EQ(count("email_blobs"), 2);
  Poco::File(bad).remove(true);
  importBlobFiles(dir, *store_, log);
  EXPECT_FALSE(Poco::File(dir).exists()) << "the emptied directory is removed";
  EXPECT_EQ(importBlobFiles(dir, *store_, log).imported, 0u);
}

INSTANTIATE_TEST_SUITE_P(Databases, DbBlobStoreTest, ::testing::Values("sqlite", "mysql"),
                         [](const auto& info) { return info.param; });

TEST(FileBlobStore, ReadsBackInPiecesAndMissingKeysAreNone) {
  TempDir dir;
  FileBlobStore store(dir.path + "/blobs");
  const std::string data = bytesOf(kBlobPieceBytes + 9, 6);
  const std::string key = store.put(data);
  EXPECT_EQ(store.put(data), key);
  auto reader = store.open(key);
  ASSERT_TRUE(reader);
  EXPECT_EQ(reader->size(), data.size());
  auto got = pieces(*reader);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0] + got[1], data);
  EXPECT_FALSE(store.open(sdk::sha256Hex("nothing")));
  EXPECT_FALSE(store.open("../../etc/passwd"));
}

// A stream as the kernel's hub is to a handler: it queues what it is given, and its peer takes
// the queue on another thread.
class DrainedStream : public sdk::Stream {
 public:
  bool respond(const sdk::Response&) override { return false; }
  bool begin(int status, const std::string&,
             const std::vector<std::pair<std::string, std::string>>& headers) override {
    status_ = status;
    headers_ = headers;
    return true;
  }
  bool write(const std::string& data) override {
    std::lock_guard lock(mutex_);
    if (closed_ || queued_ + data.size() > kLimit) return false;
    body_ += data;
    queued_ += data.size();
    max_queued_ = std::max(max_queued_, queued_);
    return true;
  }
  void finish() override {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  bool isOpen() const override {
    std::lock_guard lock(mutex_);
    return !closed_;
  }
  void onClose(std::function<void()>) override {}
  void expireAfter(std::chrono::milliseconds, std::function<void()>) override {}
  const std::string& requestId() const override { return id_; }
  std::size_t queued() const override {
    std::lock_guard lock(mutex_);
    return queued_;
  }
  void drain() {
    std::lock_guard lock(mutex_);
    queued_ = queued_ > 10000 ? queued_ - 10000 : 0;
  }

  static constexpr std::size_t kLimit = 256 * 1024;
  int status_ = 0;
  std::vector<std::pair<std::string, std::string>> headers_;
  std::string body_, id_ = "r";
  std::size_t max_queued_ = 0;
  mutable std::mutex mutex_;
  std::size_t queued_ = 0;
  bool closed_ = false;
};

TEST(BlobResponse, OnePieceIsAPlainAnswerAndMoreIsStreamedAsThePeerTakesIt) {
  TempDir dir;
  FileBlobStore store(dir.path + "/blobs");
  auto small = blobResponse(store.open(store.put("tiny")), "text/plain", {{"X-A", "1"}});
  EXPECT_FALSE(small.on_hold);
  EXPECT_EQ(small.body, "tiny");
  EXPECT_EQ(small.content_type, "text/plain");

  const std::string data = bytesOf(3 * kBlobPieceBytes + 1000, 7);
  auto big = blobResponse(store.open(store.put(data)), "application/pdf", {{"X-A", "1"}});
  ASSERT_TRUE(big.on_hold);
  auto stream = std::make_shared<DrainedStream>();
  std::atomic<bool> done{false};
  std::thread peer([&] {
    while (!done) {
      stream->drain();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  big.on_hold(stream);
  done = true;
  peer.join();
  EXPECT_EQ(stream->status_, 200);
  EXPECT_EQ(stream->body_.size(), data.size());
  EXPECT_TRUE(stream->body_ == data);
  EXPECT_FALSE(stream->isOpen()) << "finished";
  EXPECT_LE(stream->max_queued_, kBlobQueuedBytes + kBlobWriteBytes);
  bool length = false;
  for (const auto& [name, value] : stream->headers_) {
    if (name == "Content-Length") length = value == std::to_string(data.size());
  }
  EXPECT_TRUE(length);
}

}  // namespace
}  // namespace svc::plugins::email
