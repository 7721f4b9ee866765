#include "master_keys.h"

#include <svc/sdk/util.h>

#include <Poco/File.h>
#include <Poco/Path.h>
#include <Poco/String.h>

#include <openssl/rand.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
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

}  // namespace

std::string randomBytes(std::size_t count) {
  std::string raw(count, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(count)) != 1) {
    throw std::runtime_error("RAND_bytes failed");
  }
  return raw;
}

MasterKey MasterKeys::generate() {
  return {sdk::hexEncode(randomBytes(4)), randomBytes(kKeyBytes)};
}

MasterKeys MasterKeys::load(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) throw fileError(path, std::strerror(errno));
    MasterKeys fresh;
    fresh.keys_.push_back(generate());
    Poco::File(Poco::Path(path).parent()).createDirectories();
    fresh.save(path);
    return fresh;
  }
  if ((st.st_mode & 077) != 0) {
    throw fileError(path, "other users may read it; make it mode 0600 (chmod 600)");
  }
  std::ifstream in(path);
  if (!in) throw fileError(path, "cannot be read");
  MasterKeys keys;
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

MasterKeys MasterKeys::withCurrent(MasterKey key) const {
  MasterKeys out;
  out.keys_.push_back(std::move(key));
  for (const auto& k : keys_) out.keys_.push_back(k);
  return out;
}

MasterKeys MasterKeys::keeping(const std::vector<std::string>& ids) const {
  MasterKeys out;
  out.keys_.push_back(current());
  for (std::size_t i = 1; i < keys_.size(); ++i) {
    if (std::find(ids.begin(), ids.end(), keys_[i].id) != ids.end()) out.keys_.push_back(keys_[i]);
  }
  return out;
}

void MasterKeys::save(const std::string& path) const {
  std::string text =
      "# svc vault master keys: `<id> <base64>`, the current key first. Keep this file secret\n"
      "# and backed up with the database: without it the vault's values cannot be read.\n";
  for (const auto& k : keys_) text += k.id + " " + sdk::base64(k.bytes) + "\n";
  const std::string temporary = path + ".tmp";
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw fileError(path, std::string("cannot write: ") + std::strerror(errno));
  const bool written = ::fchmod(fd, 0600) == 0 && writeAll(fd, text) && ::fsync(fd) == 0;
  ::close(fd);
  if (!written || ::rename(temporary.c_str(), path.c_str()) != 0) {
    ::unlink(temporary.c_str());
    throw fileError(path, std::string("cannot write: ") + std::strerror(errno));
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
