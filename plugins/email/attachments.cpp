#include "attachments.h"

#include "blob_response.h"
#include "request_scope.h"
#include "upload_form.h"

#include <Poco/URI.h>

namespace svc::plugins::email {

std::string contentDisposition(const std::string& filename) {
  std::string ascii;
  for (char c : filename) ascii += (static_cast<unsigned char>(c) < 0x80 && c != '"') ? c : '_';
  // RFC 5987 attr-chars stay as they are; everything else Poco's encoder leaves is reserved here.
  std::string encoded;
  Poco::URI::encode(filename, "#&+/:;=?@", encoded);
  return "attachment; filename=\"" + ascii + "\"; filename*=UTF-8''" + encoded;
}

Attachments::Attachments(sdk::Database& database, MailStore& store, BlobStore& blobs,
                         std::size_t max_bytes)
    : database_(database), store_(store), blobs_(blobs), max_bytes_(max_bytes) {}

sdk::Response Attachments::upload(sdk::Request& r) {
  Upload u = readUpload(r.header("content-type").value_or(""), r.body,
                        r.queryParam("filename").value_or(""), max_bytes_);
  auto a = store_.saveAttachment(r.principal.account_id, sdk::scopeIdentity(r), u.filename,
                                 u.content_type, u.data);
  return sdk::Response::json(201, MailStore::attachmentJson(a));
}

AttachmentRecord Attachments::visibleAttachment(const sdk::Request& r) {
  Poco::Data::Session s = database_.session();
  auto a = store_.attachment(s, r.params.at("uuid"));
  if (!a || a->account_id != r.principal.account_id) throw sdk::HttpError::notFound("attachment");
  std::string scope = sdk::scopeIdentity(r);
  if (!scope.empty() && !a->identity_uuid.empty() && a->identity_uuid != scope) {
    throw sdk::HttpError::notFound("attachment");
  }
  return *a;
}

sdk::Response Attachments::record(sdk::Request& r) {
  return sdk::Response::json(200, MailStore::attachmentJson(visibleAttachment(r)));
}

sdk::Response Attachments::download(sdk::Request& r) {
  auto a = visibleAttachment(r);
  auto reader = blobs_.open(a.sha256);
  if (!reader) throw sdk::HttpError(500, "server_error", "The attachment's bytes are missing.");
  // Never rendered in the API's origin: downloaded, not sniffed, sandboxed if opened. Streamed
  // when larger than a piece (blob_response.h).
  return blobResponse(std::move(reader), a.content_type,
                      {{"Content-Disposition", contentDisposition(a.filename)},
                       {"X-Content-Type-Options", "nosniff"},
                       {"Content-Security-Policy", "sandbox; default-src 'none'"}});
}

}  // namespace svc::plugins::email
