#include "db_blob_store.h"

#include <svc/sdk/util.h>

#include <Poco/Data/LOB.h>
#include <Poco/Data/Statement.h>

#include <stdexcept>
#include <vector>

using namespace Poco::Data::Keywords;

namespace svc::plugins::email {

namespace {

class DbBlobReader : public BlobReader {
 public:
  DbBlobReader(sdk::Database& db, std::string key, std::uint64_t size, int parts)
      : db_(db), key_(std::move(key)), size_(size), parts_(parts) {}
  std::uint64_t size() const override { return size_; }

  std::string next() override {
    if (part_ >= parts_) {
      if (read_ != size_) throw std::runtime_error("blob " + key_ + " is shorter than its size");
      return {};
    }
    // SQLite's blob is read as it is; MySQL's through a substring of a chunk's declared size.
    const std::string column = db_.dialect() == sdk::Dialect::kMysql
                                   ? "SUBSTRING(bytes, 1, " + std::to_string(kBlobPieceBytes) + ")"
                                   : "bytes";
    std::vector<Poco::Data::BLOB> rows;
    int part = part_;
    {
      Poco::Data::Session s = db_.session();
      s << "SELECT " + column + " FROM email_blob_chunks WHERE sha256 = ? AND part = ?", use(key_),
          use(part), into(rows), now;
    }
    if (rows.empty()) {
      throw std::runtime_error("blob " + key_ + " lacks chunk " + std::to_string(part));
    }
    ++part_;
    std::string piece(reinterpret_cast<const char*>(rows.front().rawContent()),
                      rows.front().size());
    read_ += piece.size();
    if (piece.empty() || read_ > size_) {
      throw std::runtime_error("blob " + key_ + " has a chunk that does not fit its size");
    }
    return piece;
  }

 private:
  sdk::Database& db_;
  std::string key_;
  std::uint64_t size_;
  int parts_;
  int part_ = 0;
  std::uint64_t read_ = 0;
};

}  // namespace

DbBlobStore::DbBlobStore(sdk::Database& db) : db_(db) {}

bool DbBlobStore::has(const std::string& sha256) {
  std::string key = sha256;
  std::vector<std::string> found;
  Poco::Data::Session s = db_.session();
  s << "SELECT sha256 FROM email_blobs WHERE sha256 = ?", use(key), into(found), now;
  return !found.empty();
}

std::string DbBlobStore::put(std::string_view data) {
  const std::string key = sdk::sha256Hex(data);
  if (has(key)) return key;
  const bool mysql = db_.dialect() == sdk::Dialect::kMysql;
  // Another svcd may write the same chunk at once, or a crash may have left one: the row is
  // written again with the same bytes.
  const std::string chunk_sql =
      mysql ? "INSERT INTO email_blob_chunks (sha256, part, bytes) VALUES (?, ?, ?) "
              "ON DUPLICATE KEY UPDATE bytes = VALUES(bytes)"
            : "INSERT OR REPLACE INTO email_blob_chunks (sha256, part, bytes) VALUES (?, ?, ?)";
  int parts = 0;
  for (std::size_t at = 0; at < data.size(); at += kBlobPieceBytes, ++parts) {
    const std::string_view chunk = data.substr(at, kBlobPieceBytes);
    // Everything the closure binds is made inside it: a retried transaction binds it again.
    db_.transaction([&](Poco::Data::Session& tx) {
      std::string k = key;
      int part = parts;
      Poco::Data::BLOB bytes(reinterpret_cast<const unsigned char*>(chunk.data()), chunk.size());
      tx << chunk_sql, use(k), use(part), use(bytes), now;
    });
  }
  db_.transaction([&](Poco::Data::Session& tx) {
    std::string k = key;
    Poco::Int64 size = static_cast<Poco::Int64>(data.size());
    int n = parts;
    Poco::Int64 at = sdk::nowMicros();
    tx << std::string(mysql ? "INSERT IGNORE" : "INSERT OR IGNORE") +
              " INTO email_blobs (sha256, size, parts, created_us) VALUES (?, ?, ?, ?)",
        use(k), use(size), use(n), use(at), now;
  });
  return key;
}

std::unique_ptr<BlobReader> DbBlobStore::open(const std::string& sha256) {
  if (!isBlobKey(sha256)) return nullptr;
  std::string key = sha256;
  std::vector<Poco::Int64> sizes;
  std::vector<int> parts;
  {
    Poco::Data::Session s = db_.session();
    s << "SELECT size, parts FROM email_blobs WHERE sha256 = ?", use(key), into(sizes), into(parts),
        now;
  }
  if (sizes.empty()) return nullptr;
  return std::make_unique<DbBlobReader>(db_, key, static_cast<std::uint64_t>(sizes.front()),
                                        parts.front());
}

}  // namespace svc::plugins::email
