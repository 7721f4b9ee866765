// Attachments: uploads (before a message names them), their records and their bytes.
#pragma once

#include "blob_store.h"
#include "mail_store.h"

#include <svc/sdk/http.h>
#include <svc/sdk/storage.h>

#include <cstddef>
#include <string>

namespace svc::plugins::email {

/// @param filename an attachment's name, UTF-8. @return the Content-Disposition that makes a
/// browser download it under that name: `attachment; filename="<ASCII>"; filename*=UTF-8''<...>`
/// (RFC 6266), non-ASCII and `"` as `_` in the first, percent-encoded in the second.
std::string contentDisposition(const std::string& filename);

class Attachments {
 public:
  Attachments(sdk::Database& database, MailStore& store, BlobStore& blobs, std::size_t max_bytes);

  /// @return the largest upload body the route accepts (the file plus a form's framing).
  std::size_t maxBodyBytes() const { return max_bytes_ + 65536; }

  sdk::Response upload(sdk::Request& r);
  sdk::Response record(sdk::Request& r);
  sdk::Response download(sdk::Request& r);

 private:
  AttachmentRecord visibleAttachment(const sdk::Request& r);

  sdk::Database& database_;
  MailStore& store_;
  BlobStore& blobs_;
  std::size_t max_bytes_;
};

}  // namespace svc::plugins::email
