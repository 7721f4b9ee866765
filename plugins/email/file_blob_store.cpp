#include "file_blob_store.h"

#include <svc/sdk/util.h>

#include <Poco/File.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
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

class FileBlobReader : public BlobReader {
 public:
  FileBlobReader(std::ifstream in, std::uint64_t size) : in_(std::move(in)), size_(size) {}
  std::uint64_t size() const override { return size_; }
  std::string next() override {
    std::string piece(kBlobPieceBytes, '\0');
    in_.read(piece.data(), static_cast<std::streamsize>(piece.size()));
    piece.resize(static_cast<std::size_t>(in_.gcount()));
    if (in_.bad()) throw std::runtime_error("cannot read an attachment's file");
    return piece;
  }

 private:
  std::ifstream in_;
  std::uint64_t size_;
};

}  // namespace

FileBlobStore::FileBlobStore(std::string root) : root_(std::move(root)) {
  Poco::File(root_).createDirectories();
}

std::string FileBlobStore::pathFor(const std::string& sha256) const {
  return root_ + "/" + sha256.substr(0, 2) + "/" + sha256;
}

std::string FileBlobStore::put(std::string_view data) {
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

std::unique_ptr<BlobReader> FileBlobStore::open(const std::string& sha256) {
  if (!isBlobKey(sha256)) return nullptr;
  const std::string path = pathFor(sha256);
  std::ifstream in(path, std::ios::binary);
  if (!in) return nullptr;
  return std::make_unique<FileBlobReader>(std::move(in), Poco::File(path).getSize());
}

}  // namespace svc::plugins::email
