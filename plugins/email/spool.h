// The SMTP spool: mail is acknowledged once it is appended to a local, fsynced log (as a mail
// server's queue does), and a background ingester files it into the database, recording how far
// it got in the same transaction as the messages, so after a crash every acknowledged message is
// filed exactly once. A writer thread appends what concurrent sessions queued with one write and
// one fdatasync, then hands the batch to an answering thread, which tells each of them
// (appendAsync's callback): a session need not sleep until its record is on disk, the callback
// answers its client. The writer does not answer them itself: sending a batch's answers took
// about as long as its fdatasync under load (each send wakes a client), and the next batch,
// queued meanwhile, waited for it.
//
// Records: 4-byte length, 4-byte CRC-32 of the payload, payload; payloads are never empty, so a
// zero length ends a segment. A torn tail (a crash during an append, never acknowledged) fails its
// check and ends that segment too. A new segment is started at every start-up and whenever the
// current one passes 64 MiB; consumed segments are deleted.
//
// Segments are zero-filled ahead of use: once the current segment has taken its first MiB, a
// background thread writes the next one full of zeros and syncs it ("spare", kept across
// restarts). Appending then overwrites blocks that are already allocated, so an append's
// fdatasync writes the data alone, not the file's size and block map as well; under a burst that
// roughly halves its latency, which is what bounds how fast mail is acknowledged. The writer moves
// to the spare as soon as it is ready; without one (not yet ready, or no room) it appends.
#pragma once

#include <atomic>
#include <chrono>
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
  struct Options {
    /// A segment is ended once it holds this much (and the spare is zero-filled to this size).
    std::int64_t segment_bytes = 64LL << 20;
    /// The spare is prepared once the current segment holds this much.
    std::int64_t prepare_after = 1LL << 20;
    /// Under a burst (appends written in the last burst_gap), filing waits for a lull while
    /// fewer bytes than this wait to be filed, none has waited longer than max_filing_lag, and
    /// no session waits for its message to be: its database commits share the disk with the
    /// appends' fdatasync, which paces every acknowledgement. 0: filing never waits.
    std::uint64_t defer_below_bytes = 0;
    std::chrono::milliseconds burst_gap{20};
    /// How long mail acknowledged may wait for a lull before it is filed anyway: while mail
    /// comes no faster than filing goes, an agent waiting for a code sees it within about this.
    /// A flood (mail faster than filing, which then cannot catch up within the lag) is filed one
    /// batch a lag under the burst (filing all along would take CPU from the acknowledgements
    /// and the lag would grow all the same), the rest in the lull or once past
    /// defer_below_bytes.
    std::chrono::milliseconds max_filing_lag{1000};
    /// Microseconds on a steady clock: what burst_gap, max_filing_lag and the filing rate are
    /// measured on. Empty: std::chrono::steady_clock (tests give their own).
    std::function<std::int64_t()> now{};
  };

  /// @param dir the spool directory (created; locked against a second process).
  /// @param filer files batches (on the ingester thread); throws to have the batch retried.
  Spool(std::string dir, Filer filer, Options options);
  Spool(std::string dir, Filer filer) : Spool(std::move(dir), std::move(filer), Options{}) {}
  ~Spool();
  /// @return this spool's id (kept in the directory), the key of its position in the database.
  const std::string& id() const { return id_; }
  /// Starts the ingester at the position the database recorded for this spool.
  void start(Position filed);
  void stop();
  /// Called once per appendAsync, on the answering thread (or in appendAsync when the record is
  /// refused at once), in the order of the appends: error is empty once the record is on disk
  /// (end is where it ends), or says why it could not be written. It must not block: the
  /// answers of later batches wait for it.
  using Written = std::function<void(const Position& end, const std::string& error)>;
  /// Queues a record for the writer and returns; written says when it is on disk.
  /// @throws std::invalid_argument for an empty payload (nothing is queued, written is not
  /// called).
  void appendAsync(std::string payload, Written written);
  /// Appends durably. @return the record's end position, once it is on disk.
  /// @throws std::invalid_argument for an empty payload.
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
    std::string payload;
    Written written;
    Position end;
    std::string error;
  };
  void openSegment(std::int64_t number);
  void write();
  void writeBatch(std::deque<Pending>& batch);
  void answer();
  void ingest();
  /// The ingester waits before retrying; stop() ends the wait.
  void pause(std::chrono::milliseconds how_long);
  void prepare();
  bool zeroFillSpare();
  std::vector<std::int64_t> segments() const;
  std::string segmentPath(std::int64_t number) const;

  std::string dir_, id_;
  Filer filer_;
  Options options_;
  int lock_fd_ = -1;
  // The current segment: written by the writer thread; the ingester reads segment_.
  int fd_ = -1;
  std::atomic<std::int64_t> segment_{0};
  std::int64_t size_ = 0;
  bool zeroed_ = false;  // the current segment was a spare: the rest of it is zeros
  // The spare: the preparer sets it ready, the writer takes it (renames it to a segment).
  std::atomic<bool> spare_ready_{false};
  bool spare_wanted_ = false;  // guarded by mutex_
  std::condition_variable prepare_cv_;
  std::thread preparer_;

  mutable std::mutex mutex_;
  std::condition_variable write_cv_, ingest_cv_, filed_cv_, answer_cv_;
  std::deque<Pending> queue_;
  std::deque<std::deque<Pending>> answers_;  // written batches, to be answered in order
  bool writing_ = false;                     // the writer thread runs (answers_ may grow)
  bool accepting_ = false;  // between start() and stop(): the writer thread takes appends
  Position written_, filed_;
  // Written under mutex_, read without it (every SMTP delivery checks the bound).
  std::atomic<std::size_t> unfiled_{0};
  std::atomic<std::uint64_t> unfiled_bytes_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<std::int64_t> last_append_us_{0};  // steady clock, when the writer last wrote
  // Steady clock: when the oldest record not yet filed was written (set as the backlog leaves 0).
  std::atomic<std::int64_t> oldest_unfiled_us_{0};
  std::atomic<int> waiting_filed_{0};  // sessions in waitFiled()
  double filing_rate_ = 0;             // records filed a second, lately (0: not known yet)
  std::uint64_t appended_ = 0;         // records written since start
  std::atomic<bool> in_write_{false};  // the writer is writing (and syncing) a batch
  std::int64_t last_filed_us_ = 0;     // steady clock, when the last batch was filed
  std::thread writer_, answerer_, ingester_;
};

}  // namespace svc::plugins::email
