// The SMTP spool: mail is acknowledged once it is appended to a local, fsynced log (as a mail
// server's queue does), and a background ingester files it into the database, recording how far
// it got in the same transaction as the messages, so after a crash every acknowledged message is
// filed exactly once. Appends from concurrent sessions share one write and one fdatasync.
//
// Records: 4-byte length, 4-byte CRC-32 of the payload, payload. A torn tail (a crash during an
// append, never acknowledged) fails its check and ends that segment. A new segment is started at
// every start-up and whenever the current one passes 64 MiB; consumed segments are deleted.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace svc::plugins::email {

class Spool {
 public:
  /// Where a record ends: the position the ingester records once it is filed.
  struct Position {
    std::int64_t segment = 0;
    std::int64_t offset = 0;
  };
  struct Record {
    std::string payload;
    Position end;
  };
  /// Files a batch of records and the position after the last in one transaction.
  using Filer = std::function<void(const std::vector<Record>&, const Position&)>;

  /// @param dir the spool directory (created; locked against a second process).
  /// @param filer files batches (on the ingester thread); throws to have the batch retried.
  Spool(std::string dir, Filer filer);
  ~Spool();
  /// @return this spool's id (kept in the directory), the key of its position in the database.
  const std::string& id() const { return id_; }
  /// Starts the ingester at the position the database recorded for this spool.
  void start(Position filed);
  void stop();
  /// Appends durably. @return the record's end position, once it is on disk.
  /// @throws std::runtime_error when it could not be written (the client is told to retry).
  Position append(const std::string& payload);
  /// Waits until the ingester has filed up to position, at most timeout_ms.
  /// @return true when it has.
  bool waitFiled(const Position& position, int timeout_ms);
  /// @return records appended and not yet filed.
  std::size_t backlog() const;
  /// @return payload bytes appended and not yet filed.
  std::uint64_t backlogBytes() const;

  /// @param payload a record's payload. @return its bytes on disk.
  static std::string frame(const std::string& payload);

 private:
  struct Pending {
    const std::string* payload;
    Position end;
    bool done = false;
    std::string error;
  };
  void openSegment(std::int64_t number);
  void writeBatch(std::deque<Pending*>& batch);
  void ingest();
  std::vector<std::int64_t> segments() const;
  std::string segmentPath(std::int64_t number) const;

  std::string dir_, id_;
  Filer filer_;
  int lock_fd_ = -1;
  int fd_ = -1;
  std::int64_t segment_ = 0;
  std::int64_t size_ = 0;

  mutable std::mutex mutex_;
  std::condition_variable written_cv_, ingest_cv_, filed_cv_;
  std::deque<Pending*> queue_;
  bool writing_ = false;
  Position written_, filed_;
  std::size_t unfiled_ = 0;
  std::uint64_t unfiled_bytes_ = 0;
  bool stopping_ = false;
  std::thread ingester_;
};

}  // namespace svc::plugins::email
