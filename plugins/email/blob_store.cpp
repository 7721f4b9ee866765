#include "blob_store.h"

namespace svc::plugins::email {

BlobReader::~BlobReader() = default;
BlobStore::~BlobStore() = default;

std::optional<std::string> BlobStore::get(const std::string& sha256) {
  auto reader = open(sha256);
  if (!reader) return std::nullopt;
  std::string out;
  out.reserve(static_cast<std::size_t>(reader->size()));
  for (std::string piece = reader->next(); !piece.empty(); piece = reader->next()) out += piece;
  return out;
}

bool isBlobKey(const std::string& key) {
  return key.size() == 64 && key.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace svc::plugins::email
