// A blob as an HTTP answer, streamed: a blob of one piece is a plain response; a larger one is
// held (sdk::Response::hold) and written piece by piece as the client takes it, so a download
// holds at most a piece and what the kernel has queued, never the whole file. The pieces are
// read on the request's worker thread, as a plain response's body would be written there.
// A streamed answer needs server.stream_buffer_bytes of at least kBlobQueuedBytes plus
// kBlobWriteBytes (the default, 1 MiB, is plenty). Over MCP a streamed answer is refused with
// "call it over HTTP" (the kernel's tool calls take whole answers).
#pragma once

#include "blob_store.h"

#include <svc/sdk/http.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace svc::plugins::email {

/// Bytes handed to the stream at a time, and the queue below which the next are handed over.
constexpr std::size_t kBlobWriteBytes = 64 * 1024;
constexpr std::size_t kBlobQueuedBytes = 128 * 1024;

/// @param reader the blob. @param content_type its media type. @param headers extra headers.
/// @return a 200 carrying it, with a Content-Length.
sdk::Response blobResponse(std::unique_ptr<BlobReader> reader, const std::string& content_type,
                           std::vector<std::pair<std::string, std::string>> headers);

/// Writes what is left of `reader` to a begun stream as its peer takes it. @return false when
/// the stream closed first (the peer went away or was too slow).
bool pumpBlob(BlobReader& reader, sdk::Stream& stream);

}  // namespace svc::plugins::email
