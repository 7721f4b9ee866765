#include "blob_import.h"

#include <svc/sdk/util.h>

#include <Poco/File.h>

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <vector>

namespace svc::plugins::email {

namespace {

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace

BlobImport importBlobFiles(const std::string& dir, BlobStore& into, Poco::Logger& log) {
  BlobImport done;
  Poco::File root(dir);
  if (!root.exists() || !root.isDirectory()) return done;
  std::vector<std::string> shards;
  root.list(shards);
  for (const auto& shard : shards) {
    Poco::File shard_dir(dir + "/" + shard);
    if (!shard_dir.isDirectory()) continue;
    std::vector<std::string> names;
    shard_dir.list(names);
    for (const auto& name : names) {
      const std::string path = shard_dir.path() + "/" + name;
      if (name.find(".tmp.") != std::string::npos) {  // a write a crash cut short
        ::unlink(path.c_str());
        continue;
      }
      if (!isBlobKey(name)) continue;
      // One file in memory at a time: an attachment is at most email.attachments.max_bytes.
      const std::string bytes = readFile(path);
      if (sdk::sha256Hex(bytes) != name) {
        log.warning("%s does not hold the bytes its name says; left where it is", path);
        ++done.kept;
        continue;
      }
      into.put(bytes);
      ::unlink(path.c_str());  // once the store has it; gone already if another process took it
      ++done.imported;
    }
    ::rmdir(shard_dir.path().c_str());  // fails, and stays, when anything is left
  }
  ::rmdir(dir.c_str());
  return done;
}

}  // namespace svc::plugins::email
