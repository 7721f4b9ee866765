// A held response (long-poll or stream) answered in a test: a Stream that captures what the
// handler writes, and the wait for it.
#pragma once

#include <svc/sdk/http.h>

#include <chrono>
#include <string>

namespace svc::sdk::testing {

/// Hands a Stream to held.on_hold and waits up to wait for it to be answered: a complete
/// response, or a streamed body that finishes (what was written by then is the body).
/// @return the answer; 504 `test_timeout` when nothing came in time (the stream is then closed).
Response awaitHeld(const Response& held, const std::string& request_id,
                   std::chrono::milliseconds wait);

}  // namespace svc::sdk::testing
