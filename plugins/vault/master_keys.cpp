#include "master_keys.h"

#include <svc/sdk/util.h>

#include <Poco/Path.h>
#include <Poco/String.h>

#include <openssl/rand.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace svc::plugins::vault {

namespace {

constexpr std::size_t kKeyBytes = 32;

bool validId(const std::string& id) {
  return !id.empty() && id.size() <= 16 && std::all_of(id.begin(), id.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c));
  });
}

std::runtime_error fileError(const std::string& path, const std::string& what) {
  return std::runtime_error("vault.master_key_file " + path + ": " + what);
}

std::runtime_error systemError(const std::string& path, const std::string& doing) {
  return fileError(path, doing + ": " + std::strerror(errno));
}

// Writes all of text to fd. @return false on an error.
bool writeAll(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// Reads what an open file holds. @return false on an error.
bool readAll(int fd, std::string& text) {
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > 1024 * 1024) return false;
  }
}

MasterKey newKey(const std::vector<MasterKey>& existing) {
  for (;;) {
    MasterKey k{sdk::hexEncode(randomBytes(4)), randomBytes(kKeyBytes)};
    if (std::none_of(existing.begin(), existing.end(),
                     [&](const MasterKey& e) { return e.id == k.id; })) {
      return k;
    }
  }
}

}  // namespace

std::string randomBytes(std::size_t count) {
  std::string raw(count, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(count)) != 1) {
    throw std::runtime_error("RAND_bytes failed");
  }
  return raw;
}

KeyFileLock::KeyFileLock(const std::string& path) {
  const std::string lock = path + ".lock";
  fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd_ < 0) throw systemError(lock, "cannot open the lock");
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    ::close(fd_);
    throw systemError(lock, "cannot lock");
  }
}

KeyFileLock::~KeyFileLock() {
  ::close(fd_);
}  // closing releases the lock

MasterKeys MasterKeys::fresh() {
  MasterKeys keys;
  keys.keys_.push_back(newKey({}));
  return keys;
}

std::optional<MasterKeys> MasterKeys::read(const std::string& path) {
  // Opened first, then checked: what is checked is what is read. Never through a link.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0 && errno == ENOENT) return std::nullopt;
  if (fd < 0) throw systemError(path, "cannot be opened (a symbolic link is refused)");
  if (const std::string problem = sdk::privateFileProblem(fd); !problem.empty()) {
    ::close(fd);
    throw fileError(path, problem);
  }
  std::string text;
  const bool read_ok = readAll(fd, text);
  ::close(fd);
  if (!read_ok) throw fileError(path, "cannot be read");
  MasterKeys keys;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    line = Poco::trim(line);
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string id, encoded, rest;
    fields >> id >> encoded >> rest;
    const auto bytes = sdk::base64Decode(encoded);
    if (!validId(id) || !bytes || bytes->size() != kKeyBytes || !rest.empty() || keys.find(id)) {
      throw fileError(path, "line " + std::to_string(number) +
                                " is not `<id> <base64 of 32 bytes>` with a new id");
    }
    keys.keys_.push_back({id, *bytes});
  }
  if (keys.keys_.empty()) throw fileError(path, "holds no key");
  return keys;
}

const MasterKey* MasterKeys::find(const std::string& id) const {
  for (const auto& k : keys_) {
    if (k.id == id) return &k;
  }
  return nullptr;
}

void MasterKeys::save(const std::string& path) const {
  std::string text =
      "# svc vault master key: `<id> <base64>`. Keep this file secret, the same on every svcd\n"
      "# of the database, and backed up: without it the vault's values cannot be read.\n";
  for (const auto& k : keys_) text += k.id + " " + sdk::base64(k.bytes) + "\n";
  std::string temporary = path + ".XXXXXX";
  const int fd = ::mkostemp(temporary.data(), O_CLOEXEC);  // a name of its own, made 0600
  if (fd < 0) throw systemError(path, "cannot write");
  const bool written = ::fchmod(fd, 0600) == 0 && writeAll(fd, text) && ::fsync(fd) == 0;
  ::close(fd);
  if (!written || ::rename(temporary.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(temporary.c_str());
    errno = saved;
    throw systemError(path, "cannot write");
  }
  // The rename is durable once the directory is.
  const int dir =
      ::open(Poco::Path(path).parent().toString().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

}  // namespace svc::plugins::vault
