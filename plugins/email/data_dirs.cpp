#include "data_dirs.h"

#include <Poco/File.h>
#include <Poco/Path.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace svc::plugins::email {

namespace {

bool isDirectory(const std::string& path) {
  Poco::File f(path);
  return f.exists() && f.isDirectory();
}

// A rename is durable once the directories that name the old and the new entry are synced.
void syncParent(const std::string& path) {
  const std::string parent = Poco::Path(path).parent().toString();
  int fd = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

}  // namespace

bool adoptLegacyDirectory(const std::string& legacy, const std::string& current,
                          const std::string& lock_name) {
  if (!isDirectory(legacy)) return false;
  if (Poco::File(current).exists()) {
    throw std::runtime_error("both " + legacy + " (where an older svcd kept it) and " + current +
                             " exist, and either may hold data not yet filed: svcd will not "
                             "choose. Remove the one that is not needed and start svcd again");
  }
  // A directory another svcd still uses (it holds the lock) is not moved from under it.
  int lock_fd = -1;
  if (!lock_name.empty()) {
    lock_fd = ::open((legacy + "/" + lock_name).c_str(), O_RDWR | O_CLOEXEC);
    if (lock_fd >= 0 && ::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(lock_fd);
      throw std::runtime_error(legacy + " is in use by another svcd; stop it first");
    }
  }
  Poco::File(Poco::Path(current).parent()).createDirectories();
  const int moved = ::rename(legacy.c_str(), current.c_str());
  const int error = errno;
  if (lock_fd >= 0) ::close(lock_fd);
  if (moved != 0) {
    if (error == ENOENT && isDirectory(current)) return false;  // another svcd moved it
    throw std::runtime_error("could not move " + legacy + " to " + current + ": " +
                             std::strerror(error));
  }
  syncParent(current);
  syncParent(legacy);
  return true;
}

}  // namespace svc::plugins::email
