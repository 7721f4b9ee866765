#include "spool.h"

#include <svc/sdk/util.h>

#include <Poco/Checksum.h>
#include <Poco/File.h>
#include <Poco/Logger.h>

#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace svc::plugins::email {

namespace {

constexpr std::uint32_t kMaxRecord = 256u << 20;
constexpr const char* kSpare = "/spare";
constexpr const char* kSpareTemp = "/spare.tmp";

std::int64_t steadyMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::int64_t micros(std::chrono::milliseconds d) {
  return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}

bool before(const Spool::Position& a, const Spool::Position& b) {
  return a.segment < b.segment || (a.segment == b.segment && a.offset < b.offset);
}

std::uint32_t crc32(const std::string& bytes) {
  Poco::Checksum sum(Poco::Checksum::TYPE_CRC32);
  sum.update(bytes.data(), static_cast<unsigned>(bytes.size()));
  return sum.checksum();
}

void putU32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
}

std::uint32_t getU32(const unsigned char* p) {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}

void syncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

}  // namespace

std::string Spool::frame(const std::string& payload) {
  std::string out;
  out.reserve(payload.size() + 8);
  putU32(out, static_cast<std::uint32_t>(payload.size()));
  putU32(out, crc32(payload));
  out += payload;
  return out;
}

Spool::Spool(std::string dir, Filer filer, Options options)
    : dir_(std::move(dir)), filer_(std::move(filer)), options_(std::move(options)) {
  if (!options_.now) options_.now = steadyMicros;
  Poco::File(dir_).createDirectories();
  lock_fd_ = ::open((dir_ + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd_ < 0 || ::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    throw std::runtime_error("the SMTP spool " + dir_ +
                             " is in use by another svcd (give each "
                             "svcd its own data.dir)");
  }
  std::ifstream in(dir_ + "/id");
  std::getline(in, id_);
  if (!sdk::isUuid(id_)) {
    id_ = sdk::newUuid();
    std::ofstream(dir_ + "/id") << id_ << "\n";
    syncDir(dir_);
  }
  // A spare the last run finished is used; one it was still writing is not.
  ::unlink((dir_ + kSpareTemp).c_str());
  struct stat spare {};
  if (::stat((dir_ + kSpare).c_str(), &spare) == 0) {
    if (spare.st_size == options_.segment_bytes) {
      spare_ready_ = true;
    } else {
      ::unlink((dir_ + kSpare).c_str());
    }
  }
}

Spool::~Spool() {
  stop();
  if (fd_ >= 0) ::close(fd_);
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

std::string Spool::segmentPath(std::int64_t number) const {
  return dir_ + "/segment-" + std::to_string(number);
}

std::vector<std::int64_t> Spool::segments() const {
  std::vector<std::string> names;
  Poco::File(dir_).list(names);
  std::vector<std::int64_t> out;
  for (const auto& n : names) {
    if (n.rfind("segment-", 0) == 0) {
      try {
        out.push_back(std::stoll(n.substr(8)));
      } catch (const std::exception&) {
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

void Spool::openSegment(std::int64_t number) {
  const std::string path = segmentPath(number);
  bool zeroed = false;
  if (spare_ready_.exchange(false)) {
    zeroed = ::renameat2(AT_FDCWD, (dir_ + kSpare).c_str(), AT_FDCWD, path.c_str(),
                         RENAME_NOREPLACE) == 0;
  }
  int fd = zeroed ? ::open(path.c_str(), O_WRONLY | O_CLOEXEC)
                  : ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("cannot create " + path + ": " + std::strerror(errno));
  syncDir(dir_);
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
  segment_ = number;
  size_ = 0;
  zeroed_ = zeroed;
}

void Spool::start(Position filed) {
  auto existing = segments();
  // Never append to a segment a crash may have left with a torn tail: start a new one.
  openSegment(existing.empty() ? std::max<std::int64_t>(1, filed.segment + 1)
                               : std::max(existing.back(), filed.segment) + 1);
  filed_ = filed;
  written_ = {segment_, 0};
  stopping_ = false;
  accepting_ = true;
  writing_ = true;
  writer_ = std::thread([this] { write(); });
  answerer_ = std::thread([this] { answer(); });
  ingester_ = std::thread([this] { ingest(); });
  preparer_ = std::thread([this] { prepare(); });
}

void Spool::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    accepting_ = false;  // what is queued is still written
  }
  write_cv_.notify_all();
  if (writer_.joinable()) writer_.join();
  if (answerer_.joinable()) answerer_.join();  // every session is answered
  ingest_cv_.notify_all();
  filed_cv_.notify_all();
  prepare_cv_.notify_all();
  if (ingester_.joinable()) ingester_.join();
  if (preparer_.joinable()) preparer_.join();
}

void Spool::appendAsync(std::string payload, Written written) {
  if (payload.empty()) throw std::invalid_argument("an empty record would end its segment");
  if (payload.size() > kMaxRecord) return written({}, "message too large for the spool");
  {
    std::lock_guard lock(mutex_);
    if (accepting_) {
      queue_.push_back({std::move(payload), std::move(written), {}, {}});
      // The writer waits only for an empty queue: a wake-up per batch, not per record.
      if (queue_.size() == 1) write_cv_.notify_one();
      return;
    }
  }
  written({}, "the spool is not running");
}

Spool::Position Spool::append(const std::string& payload) {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  Position end;
  std::string error;
  appendAsync(payload, [&](const Position& at, const std::string& why) {
    std::lock_guard lock(m);
    end = at;
    error = why;
    done = true;
    cv.notify_one();
  });
  std::unique_lock lock(m);
  cv.wait(lock, [&] { return done; });
  if (!error.empty()) throw std::runtime_error(error);
  return end;
}

void Spool::write() {
  std::unique_lock lock(mutex_);
  for (;;) {
    // Group commit: what was queued while the last batch was being synced is the next batch.
    write_cv_.wait(lock, [&] { return !queue_.empty() || !accepting_; });
    if (queue_.empty()) {  // stopped, and everything queued was written
      writing_ = false;
      answer_cv_.notify_one();
      return;
    }
    std::deque<Pending> batch;
    batch.swap(queue_);
    lock.unlock();
    last_append_us_ = options_.now();
    in_write_ = true;  // a write (its fdatasync) may outlast burst_gap: it is no lull
    writeBatch(batch);
    last_append_us_ = options_.now();  // a lull counts from when the disk was free again
    in_write_ = false;
    lock.lock();
    for (Pending& p : batch) {
      if (p.error.empty()) {
        if (unfiled_ == 0) oldest_unfiled_us_ = last_append_us_.load();
        ++unfiled_;
        ++appended_;
        unfiled_bytes_ += p.payload.size();
        if (before(written_, p.end)) written_ = p.end;
      }
      std::string().swap(p.payload);  // on disk: answering needs none of it
    }
    ingest_cv_.notify_one();
    answers_.push_back(std::move(batch));
    answer_cv_.notify_one();
  }
}

void Spool::answer() {
  std::unique_lock lock(mutex_);
  for (;;) {
    answer_cv_.wait(lock, [&] { return !answers_.empty() || !writing_; });
    if (answers_.empty()) return;  // the writer has ended, and every batch was answered
    std::deque<Pending> batch = std::move(answers_.front());
    answers_.pop_front();
    lock.unlock();
    for (const Pending& p : batch) p.written(p.end, p.error);
    lock.lock();
  }
}

void Spool::writeBatch(std::deque<Pending>& batch) {
  try {
    // A full segment is ended; a growing one is left for a zero-filled spare once there is one.
    if (size_ >= options_.segment_bytes || (!zeroed_ && size_ > 0 && spare_ready_)) {
      openSegment(segment_ + 1);
    }
    std::string bytes;
    for (Pending& p : batch) {
      bytes += frame(p.payload);
      p.end = {segment_, size_ + static_cast<std::int64_t>(bytes.size())};
    }
    std::size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw std::runtime_error(std::string("spool write: ") + std::strerror(errno));
      done += static_cast<std::size_t>(n);
    }
    if (::fdatasync(fd_) != 0) {
      throw std::runtime_error(std::string("spool fdatasync: ") + std::strerror(errno));
    }
    size_ += static_cast<std::int64_t>(bytes.size());
    if (size_ >= options_.prepare_after && !spare_ready_) {
      std::lock_guard lock(mutex_);
      spare_wanted_ = true;
      prepare_cv_.notify_one();
    }
  } catch (const std::exception& e) {
    for (Pending& p : batch) p.error = e.what();
    // What was half written must never sit before later records: go on in a new segment.
    try {
      openSegment(segment_ + 1);
    } catch (const std::exception&) {
    }
  }
}

bool Spool::waitFiled(const Position& position, int timeout_ms) {
  std::unique_lock lock(mutex_);
  ++waiting_filed_;
  ingest_cv_.notify_one();  // a filing that waits for a lull goes on at once
  const bool filed = filed_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] {
    return stopping_ || !before(filed_, position);
  }) && !before(filed_, position);
  --waiting_filed_;
  return filed;
}

std::size_t Spool::backlog() const {
  return unfiled_;
}

std::uint64_t Spool::backlogBytes() const {
  return unfiled_bytes_;
}

void Spool::ingest() {
  // Filing yields to the sessions acknowledging mail (the lowest nice: it takes what CPU they
  // leave): under a burst the backlog grows, bounded by the plugin, and drains when the burst is
  // over; mail already acknowledged is on disk.
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 19);
  Position pos;
  {
    std::lock_guard lock(mutex_);
    pos = filed_;
  }
  auto& log = Poco::Logger::get("plugin.email");
  std::vector<char> chunk;
  // Records arriving a second, over the last lag or more (the ingester's own view).
  double arrival_rate = 0;
  std::uint64_t arrivals_mark = 0;
  std::int64_t arrivals_mark_us = options_.now();
  for (;;) {
    Position limit;
    std::int64_t current;
    {
      std::unique_lock lock(mutex_);
      ingest_cv_.wait_for(lock, std::chrono::seconds(1), [&] {
        return stopping_ || before(pos, written_) || pos.segment < segment_;
      });
      if (stopping_) return;  // what is left is filed at the next start
      // A burst: wait for a lull, within the bounds (Options::defer_below_bytes).
      const auto bounded = [&] {
        return stopping_ || waiting_filed_ > 0 || unfiled_bytes_ >= options_.defer_below_bytes;
      };
      const std::int64_t now_us = options_.now();
      const std::int64_t lag = micros(options_.max_filing_lag);
      if (now_us - arrivals_mark_us >= lag) {
        arrival_rate = static_cast<double>(appended_ - arrivals_mark) * 1e6 /
                       static_cast<double>(now_us - arrivals_mark_us);
        arrivals_mark = appended_;
        arrivals_mark_us = now_us;
      }
      const std::int64_t lull_us = in_write_
                                       ? micros(options_.burst_gap)
                                       : last_append_us_ + micros(options_.burst_gap) - now_us;
      std::int64_t lag_us = oldest_unfiled_us_ + lag - now_us;
      if (lag_us <= 0 && filing_rate_ > 0 && arrival_rate > filing_rate_ &&
          static_cast<double>(unfiled_) > filing_rate_ * static_cast<double>(lag) / 1e6) {
        // A flood: mail comes faster than filing goes, and filing could not catch up within the
        // lag. One batch a lag still goes, which keeps the rates current.
        lag_us = last_filed_us_ + lag - now_us;
      }
      if (options_.defer_below_bytes > 0 && !bounded() && lull_us > 0 && lag_us > 0) {
        ingest_cv_.wait_for(lock, std::chrono::microseconds(std::min(lull_us, lag_us)), bounded);
        continue;
      }
      limit = written_;
      current = segment_;
    }
    // Segments before the position were filed completely: remove them.
    std::vector<std::int64_t> all = segments();
    for (std::int64_t s : all) {
      if (s < pos.segment) ::unlink(segmentPath(s).c_str());
    }
    if (pos.segment < current && std::find(all.begin(), all.end(), pos.segment) == all.end()) {
      auto next = std::upper_bound(all.begin(), all.end(), pos.segment);
      pos = {next == all.end() ? current : *next, 0};
      continue;
    }
    // Read what follows the position in its segment (up to what was acknowledged there).
    const std::int64_t began_us = options_.now();
    int fd = ::open(segmentPath(pos.segment).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      pause(std::chrono::milliseconds(100));
      continue;
    }
    std::int64_t end = pos.segment == limit.segment ? limit.offset : ::lseek(fd, 0, SEEK_END);
    std::vector<Record> batch;
    std::size_t batch_bytes = 0;
    std::int64_t offset = pos.offset;
    bool torn = false, ended = false;
    while (offset < end && batch.size() < 256 && batch_bytes < (8u << 20)) {
      unsigned char head[8];
      if (end - offset < 8 || ::pread(fd, head, 8, offset) != 8) {
        torn = true;
        break;
      }
      std::uint32_t len = getU32(head), crc = getU32(head + 4);
      if (len == 0) {  // the zeros after the last record of a segment that was a spare
        ended = true;
        break;
      }
      if (len > kMaxRecord || end - offset - 8 < static_cast<std::int64_t>(len)) {
        torn = true;
        break;
      }
      std::string payload(len, '\0');
      if (::pread(fd, payload.data(), len, offset + 8) != static_cast<ssize_t>(len) ||
          crc32(payload) != crc) {
        torn = true;
        break;
      }
      offset += 8 + static_cast<std::int64_t>(len);
      batch_bytes += len;
      batch.push_back({std::move(payload), {pos.segment, offset}});
    }
    ::close(fd);
    if (!batch.empty()) {
      try {
        filer_(batch, batch.back().end);
      } catch (const std::exception& e) {
        log.error("filing spooled mail failed (retrying): %s", std::string(e.what()));
        pause(std::chrono::seconds(1));
        continue;
      }
      pos = batch.back().end;
      const double seconds = std::max<std::int64_t>(options_.now() - began_us, 1) / 1e6;
      std::lock_guard lock(mutex_);
      const double rate = static_cast<double>(batch.size()) / seconds;
      filing_rate_ = filing_rate_ == 0 ? rate : 0.7 * filing_rate_ + 0.3 * rate;
      last_filed_us_ = options_.now();
      filed_ = pos;
      // Records of an earlier run were never counted: the counts stop at zero.
      unfiled_ = unfiled_ - std::min(unfiled_.load(), batch.size());
      unfiled_bytes_ = unfiled_bytes_ - std::min<std::uint64_t>(unfiled_bytes_, batch_bytes);
      filed_cv_.notify_all();
      continue;
    }
    // Nothing (more) to read here: an older segment is finished (a torn tail was never
    // acknowledged); move on to the next.
    if (pos.segment < current && (torn || ended || offset >= end)) {
      if (torn) {
        log.warning("spool segment " + std::to_string(pos.segment) +
                    " ends in a torn record (never acknowledged)");
      }
      std::vector<std::int64_t> later = segments();
      auto next = std::upper_bound(later.begin(), later.end(), pos.segment);
      Position moved{next == later.end() ? current : *next, 0};
      try {
        filer_({}, moved);  // record that the segment is done
      } catch (const std::exception& e) {
        log.error("recording the spool position failed: %s", std::string(e.what()));
        pause(std::chrono::seconds(1));
        continue;
      }
      pos = moved;
      std::lock_guard lock(mutex_);
      filed_ = pos;
      filed_cv_.notify_all();
    }
  }
}

void Spool::pause(std::chrono::milliseconds how_long) {
  std::unique_lock lock(mutex_);
  ingest_cv_.wait_for(lock, how_long, [&] { return stopping_.load(); });
}

void Spool::prepare() {
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 19);
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      prepare_cv_.wait(lock, [&] { return stopping_ || (spare_wanted_ && !spare_ready_); });
      if (stopping_) return;
      spare_wanted_ = false;
    }
    if (!zeroFillSpare()) {
      // No room, most likely: segments are appended to meanwhile; try again in a minute.
      std::unique_lock lock(mutex_);
      prepare_cv_.wait_for(lock, std::chrono::minutes(1), [&] { return stopping_.load(); });
    }
  }
}

bool Spool::zeroFillSpare() {
  const std::string temp = dir_ + kSpareTemp;
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  // Written a MiB at a time, with writeback started every 8 MiB, so the disk never holds one
  // long flush that the appends' syncs would queue behind.
  // The zeros are a read-only anonymous mapping: every page is the kernel's shared zero page, so
  // they cost no memory (a zeroed vector would hold a resident MiB for the life of the process).
  constexpr std::size_t kZeros = 1 << 20;
  static const char* const zeros = static_cast<const char*>(
      ::mmap(nullptr, kZeros, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (zeros == MAP_FAILED) {
    ::close(fd);
    return false;
  }
  constexpr std::int64_t kFlushEvery = 8 << 20;
  std::int64_t offset = 0;
  bool ok = true;
  while (ok && offset < options_.segment_bytes && !stopping_) {
    auto n = static_cast<std::size_t>(
        std::min<std::int64_t>(static_cast<std::int64_t>(kZeros), options_.segment_bytes - offset));
    ssize_t w = ::pwrite(fd, zeros, n, offset);
    if (w < 0 && errno == EINTR) continue;
    ok = w > 0;
    if (!ok) break;
    offset += w;
    if (offset % kFlushEvery == 0) {
      ::sync_file_range(fd, offset - kFlushEvery, kFlushEvery, SYNC_FILE_RANGE_WRITE);
    }
  }
  ok = ok && offset == options_.segment_bytes && ::fdatasync(fd) == 0;
  ::close(fd);
  if (ok) ok = ::rename(temp.c_str(), (dir_ + kSpare).c_str()) == 0;
  if (!ok) {
    if (!stopping_) {
      Poco::Logger::get("plugin.email")
          .warning("cannot prepare a spool segment (appending instead): %s",
                   std::string(std::strerror(errno)));
    }
    ::unlink(temp.c_str());
    return false;
  }
  syncDir(dir_);
  spare_ready_ = true;
  return true;
}

}  // namespace svc::plugins::email
