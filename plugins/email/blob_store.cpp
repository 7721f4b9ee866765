#include "blob_store.h"

#include <svc/sdk/util.h>

#include <Poco/File.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace svc::plugins::email {

namespace {

void syncPath(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags);
  if (fd < 0) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) throw std::runtime_error("cannot fsync " + path + ": " + std::strerror(errno));
}

}  // namespace

BlobStore::BlobStore(std::string root) : root_(std::move(root)) {
  Poco::File(root_).createDirectories();
}

std::string BlobStore::pathFor(const std::string& sha256) const {
  return root_ + "/" + sha256.substr(0, 2) + "/" + sha256;
}

std::string BlobStore::put(std::string_view data) {
  const std::string key = sdk::sha256Hex(data);
  const std::string path = pathFor(key);
  if (Poco::File(path).exists()) return key;
  const std::string dir = root_ + "/" + key.substr(0, 2);
  Poco::File(dir).createDirectories();
  // Write beside, fsync, rename, fsync the directory: a crash leaves the old state or the whole
  // file, never a torn one under the final name.
  const std::string tmp = path + ".tmp." + sdk::randomToken(6);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("cannot create " + tmp + ": " + std::strerror(errno));
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw std::runtime_error("cannot write " + tmp + ": " + std::strerror(e));
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot fsync " + tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot rename " + tmp + ": " + std::strerror(errno));
  }
  syncPath(dir, O_RDONLY | O_DIRECTORY);
  return key;
}

std::optional<std::string> BlobStore::get(const std::string& sha256) const {
  if (sha256.size() != 64 || sha256.find_first_not_of("0123456789abcdef") != std::string::npos)
    return std::nullopt;
  std::ifstream in(pathFor(sha256), std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace svc::plugins::email
