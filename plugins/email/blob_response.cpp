#include "blob_response.h"

#include <chrono>
#include <thread>

namespace svc::plugins::email {

namespace {

bool writePiece(const std::string& piece, sdk::Stream& stream) {
  for (std::size_t at = 0; at < piece.size(); at += kBlobWriteBytes) {
    // The hub closes a peer that takes nothing for its send timeout, which ends this wait.
    while (stream.isOpen() && stream.queued() >= kBlobQueuedBytes) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (!stream.write(piece.substr(at, kBlobWriteBytes))) return false;
  }
  return true;
}

}  // namespace

bool pumpBlob(BlobReader& reader, sdk::Stream& stream) {
  for (std::string piece = reader.next(); !piece.empty(); piece = reader.next()) {
    if (!writePiece(piece, stream)) return false;
  }
  return true;
}

sdk::Response blobResponse(std::unique_ptr<BlobReader> reader, const std::string& content_type,
                           std::vector<std::pair<std::string, std::string>> headers) {
  // The first piece is read here: a blob that cannot be read answers 500, not a cut-off 200.
  std::string first = reader->next();
  if (reader->size() <= first.size()) {
    sdk::Response r;
    r.status = 200;
    r.content_type = content_type;
    r.body = std::move(first);
    r.headers = std::move(headers);
    return r;
  }
  headers.emplace_back("Content-Length", std::to_string(reader->size()));
  std::shared_ptr<BlobReader> rest(std::move(reader));
  return sdk::Response::hold([rest, first = std::move(first), content_type,
                              headers = std::move(headers)](std::shared_ptr<sdk::Stream> stream) {
    if (!stream->begin(200, content_type, headers)) return;
    try {
      if (writePiece(first, *stream)) pumpBlob(*rest, *stream);
    } catch (...) {
      stream->finish();  // cut short of its Content-Length: the client sees it is incomplete
      throw;
    }
    stream->finish();
  });
}

}  // namespace svc::plugins::email
